// The search box: results as you type (debounced; a newer keystroke aborts the request before it), each hit
// with its heading path, file:line, the sentence highlighted between its neighbours, whether it has a vector
// yet, and its forge link. Keyboard: "/" focuses the box, ↓/↑ move through the hits, Enter opens one in
// context, Escape returns to the box. The results run again when the index changes (panels.js says when).
"use strict";

(() => {
  const { $, call, el, forgeLink, lines, showSource } = window.citeline;
  const DEBOUNCE_MS = 60;
  const cache = new Map();
  let timer = null;
  let inflight = null;
  let sequence = 0;

  function terms(query) {
    const words = query.toLowerCase().split(/[^\p{L}\p{N}_]+/u).filter((w) => w.length > 1);
    return [...new Set(words)].map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  }

  // `text` as nodes with every query term in a <mark>: text nodes only, never HTML.
  function highlighted(text, query) {
    const found = terms(query);
    if (!found.length) return [document.createTextNode(text)];
    const pattern = new RegExp(`(${found.join("|")})`, "giu");
    const nodes = [];
    let last = 0;
    for (const match of text.matchAll(pattern)) {
      if (match.index > last) nodes.push(document.createTextNode(text.slice(last, match.index)));
      nodes.push(el("mark", match[0]));
      last = match.index + match[0].length;
    }
    if (last < text.length) nodes.push(document.createTextNode(text.slice(last)));
    return nodes;
  }

  function hitItem(hit, query) {
    const item = el("li", null, "hit");
    item.dataset.sentenceId = hit.sentence_id;
    const head = el("div", null, "hit-head");
    if (hit.heading_path && hit.heading_path.length) head.append(el("span", hit.heading_path.join(" › "), "heading"));
    const open = el("button", `${hit.repository}/${hit.path}:${lines(hit)}`, "hit-open");
    open.type = "button";
    open.addEventListener("click", () => {
      showSource(hit);
      $("source").scrollIntoView({ block: "nearest" });
    });
    const vector = el("span", hit.embedded ? "vector" : "no vector yet", hit.embedded ? "badge vector" : "badge pending");
    head.append(" ", open, " ", vector);
    const forge = forgeLink(hit);
    if (forge) head.append(" ", forge);
    const context = el("p", null, "hit-context");
    if (hit.before) context.append(el("span", hit.before + " ", "around"));
    const sentence = el("span", null, "sentence");
    sentence.append(...highlighted(hit.text, query));
    context.append(sentence);
    if (hit.after) context.append(el("span", " " + hit.after, "around"));
    item.append(head, context);
    return item;
  }

  function render(query, body, focusIndex) {
    const list = $("search-results");
    list.replaceChildren(...body.hits.map((hit) => hitItem(hit, query)));
    list.dataset.query = query;
    const n = body.hits.length;
    $("search-count").textContent = n ? `${n} result${n === 1 ? "" : "s"} for “${query}”` : `No results for “${query}”`;
    if (focusIndex !== null && focusIndex >= 0) {
      const buttons = list.querySelectorAll(".hit-open");
      if (buttons.length) buttons[Math.min(focusIndex, buttons.length - 1)].focus();
    }
    document.dispatchEvent(new CustomEvent("citeline:search-rendered", { detail: { query } }));
  }

  function focusedHit() {
    const buttons = [...$("search-results").querySelectorAll(".hit-open")];
    return buttons.indexOf(document.activeElement);
  }

  async function run(fresh) {
    const query = $("search").value.trim();
    const lane = $("lane").value;
    const repos = $("repos").value.split(",").map((r) => r.trim()).filter(Boolean);
    const focusIndex = fresh ? focusedHit() : null;
    if (inflight) inflight.abort();
    inflight = null;
    const mine = ++sequence;
    if (!query) {
      $("search-results").replaceChildren();
      $("search-results").dataset.query = "";
      $("search-count").textContent = "";
      return;
    }
    const params = new URLSearchParams({ q: query, k: "10", lane, context: "true" });
    for (const repo of repos) params.append("repo", repo);
    const key = params.toString();
    if (!fresh && cache.has(key)) {
      render(query, cache.get(key), null);
      return;
    }
    const controller = new AbortController();
    inflight = controller;
    try {
      const body = await call(`/v1/search?${key}`, { signal: controller.signal });
      cache.set(key, body);
      if (cache.size > 200) cache.delete(cache.keys().next().value);
      if (mine === sequence) render(query, body, focusIndex);
    } catch (error) {
      if (error.name !== "AbortError" && mine === sequence) $("search-count").textContent = "search: " + error.message;
    } finally {
      if (inflight === controller) inflight = null;
    }
  }

  function schedule() {
    clearTimeout(timer);
    timer = setTimeout(() => run(false), DEBOUNCE_MS);
  }

  function move(event) {
    const buttons = [...$("search-results").querySelectorAll(".hit-open")];
    const at = buttons.indexOf(document.activeElement);
    if (event.key === "ArrowDown" && buttons.length) {
      event.preventDefault();
      buttons[Math.min(at + 1, buttons.length - 1)].focus();
    } else if (event.key === "ArrowUp" && at >= 0) {
      event.preventDefault();
      (at === 0 ? $("search") : buttons[at - 1]).focus();
    } else if (event.key === "Escape" && at >= 0) {
      event.preventDefault();
      $("search").focus();
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    const box = $("search");
    box.addEventListener("input", schedule);
    box.addEventListener("keydown", (event) => {
      if (event.key === "Enter") {
        event.preventDefault();
        clearTimeout(timer);
        run(false);
      } else {
        move(event);
      }
    });
    $("search-form").addEventListener("submit", (event) => event.preventDefault());
    $("search-results").addEventListener("keydown", move);
    $("lane").addEventListener("change", () => run(false));
    document.addEventListener("keydown", (event) => {
      const target = event.target;
      const typing = target instanceof HTMLElement &&
        (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName));
      if (event.key === "/" && !typing && !event.ctrlKey && !event.metaKey && !event.altKey) {
        event.preventDefault();
        box.focus();
        box.select();
      }
    });
    document.addEventListener("citeline:index-changed", () => {
      cache.clear();
      if (box.value.trim()) run(true);
    });
    document.addEventListener("citeline:key", () => {
      cache.clear();
      if (box.value.trim()) run(true);
    });
  });
})();
