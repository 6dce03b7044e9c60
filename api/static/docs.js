// The API reference: /schema/openapi.json rendered as plain HTML, from this server only (no CDN), so it
// works offline. Every value is inserted with textContent, never as HTML.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const el = (tag, text, className) => {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = text;
    if (className) node.className = className;
    return node;
  };
  const METHODS = ["get", "post", "put", "patch", "delete"];

  // A schema in one line: a $ref by name, an array of its items, else its type with constraints.
  function describe(schema) {
    if (!schema) return "";
    if (schema.$ref) return schema.$ref.split("/").pop();
    if (schema.oneOf || schema.anyOf) return (schema.oneOf || schema.anyOf).map(describe).join(" | ");
    if (schema.type === "array") return `array of ${describe(schema.items)}`;
    const limits = ["minimum", "maximum", "minLength", "maxLength"].filter((k) => schema[k] !== undefined)
      .map((k) => `${k} ${schema[k]}`);
    const kind = schema.enum ? `one of ${schema.enum.join(", ")}` : schema.type || "object";
    return limits.length ? `${kind} (${limits.join(", ")})` : kind;
  }

  function operation(path, method, op) {
    const section = el("section", null, "operation");
    section.id = `${method}-${path}`.replace(/[^a-zA-Z0-9-]/g, "_");
    section.append(el("h2", `${method.toUpperCase()} ${path}`));
    if (op.summary) section.append(el("p", op.summary));
    if (op.description) section.append(el("p", op.description, "meta"));
    const params = op.parameters || [];
    if (params.length) {
      const list = el("ul");
      for (const p of params) {
        list.append(el("li", `${p.name} (${p.in}${p.required ? ", required" : ""}): ${describe(p.schema)}`));
      }
      section.append(el("h3", "Parameters"), list);
    }
    const body = op.requestBody && op.requestBody.content;
    if (body) {
      const [media, spec] = Object.entries(body)[0];
      section.append(el("h3", "Body"), el("p", `${media}: ${describe(spec.schema)}`));
    }
    const responses = el("ul");
    for (const [status, response] of Object.entries(op.responses || {})) {
      const content = response.content ? Object.entries(response.content)[0] : null;
      const shape = content ? ` — ${content[0]}: ${describe(content[1].schema)}` : "";
      responses.append(el("li", `${status} ${response.description || ""}${shape}`));
    }
    section.append(el("h3", "Responses"), responses);
    return section;
  }

  function schemaSection(name, schema) {
    const section = el("section", null, "schema");
    section.id = `schema-${name}`;
    section.append(el("h3", name));
    if (schema.description) section.append(el("p", schema.description, "meta"));
    const required = new Set(schema.required || []);
    const list = el("ul");
    for (const [field, spec] of Object.entries(schema.properties || {})) {
      list.append(el("li", `${field}${required.has(field) ? "" : " (optional)"}: ${describe(spec)}`));
    }
    section.append(list);
    return section;
  }

  async function load() {
    try {
      const response = await fetch("/schema/openapi.json", { headers: { Accept: "application/json" } });
      if (!response.ok) throw new Error("HTTP " + response.status);
      const spec = await response.json();
      $("reference-info").textContent = `${spec.info.title} ${spec.info.version}: ${spec.info.description || ""}`;
      const operations = [];
      for (const [path, item] of Object.entries(spec.paths || {})) {
        for (const method of METHODS) if (item[method]) operations.push(operation(path, method, item[method]));
      }
      $("operations").replaceChildren(...operations);
      const schemas = (spec.components && spec.components.schemas) || {};
      $("schemas").replaceChildren(...Object.entries(schemas).map(([n, s]) => schemaSection(n, s)));
    } catch (error) {
      $("reference-info").textContent = "The schema could not be loaded: " + error.message;
    }
  }

  document.addEventListener("DOMContentLoaded", load);
})();
