// The question page: plain DOM, no framework, no build step. Every value from the API is inserted with
// textContent, never as HTML, so indexed Markdown cannot inject markup into the page.
"use strict";

const $ = (id) => document.getElementById(id);

function headers(json) {
  const h = { Accept: "application/json" };
  if (json) h["Content-Type"] = "application/json";
  const key = $("api-key").value.trim();
  if (key) h.Authorization = "Bearer " + key;
  return h;
}

async function call(path, options) {
  const response = await fetch(path, options);
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    throw new Error(body.detail || body.title || "HTTP " + response.status);
  }
  return body;
}

function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = text;
  if (className) node.className = className;
  return node;
}

function showError(message) {
  $("error").textContent = message;
  $("error").hidden = !message;
}

function renderAnswer(answer) {
  $("answer").hidden = false;
  const rounds = (answer.trace || []).length;
  $("answer-meta").textContent = `${answer.status} · route ${answer.route} · budget ${answer.budget} · ` +
    `${rounds} round${rounds === 1 ? "" : "s"}` + (answer.cached ? " · served from the answer store" : "") +
    (answer.id ? ` · id ${answer.id}` : "");
  $("answer-reason").textContent = answer.reason || "";
  $("answer-reason").hidden = !answer.reason;
  const list = $("clauses");
  list.replaceChildren();
  for (const clause of answer.clauses || []) {
    const item = el("li", null, "clause");
    item.append(el("span", clause.clause, "clause-text"));
    item.append(el("span", `${Math.round(clause.confidence * 100)}%`, "confidence"));
    const sources = el("div", null, "sources");
    for (const source of clause.sources || []) {
      const link = el("a", `${source.path}:${source.line_start}-${source.line_end}`);
      link.href = "#";
      if (source.state) link.classList.add("state-" + source.state);
      link.dataset.sentenceId = source.sentence_id ?? "";
      link.title = source.text;
      link.addEventListener("click", (event) => {
        event.preventDefault();
        showSource(source);
      });
      sources.append(link);
    }
    item.append(sources);
    list.append(item);
  }
  $("rounds-summary").textContent = `Rounds (${rounds})`;
  const roundList = $("rounds-list");
  roundList.replaceChildren();
  for (const round of answer.trace || []) {
    const text = `queries: ${(round.queries || []).join(" | ")} · accepted ${(round.accepted || []).length}` +
      ` · rejected ${(round.rejected || []).length}`;
    roundList.append(el("li", text));
  }
}

async function showSource(source) {
  const aside = $("source");
  aside.hidden = false;
  const context = $("source-context");
  context.replaceChildren();
  if (source.sentence_id === null || source.sentence_id === undefined || source.state === "deleted") {
    $("source-where").textContent = `${source.path}:${source.line_start}-${source.line_end} (deleted since cited)`;
    context.append(el("p", source.text, "hit"));
    return;
  }
  try {
    const s = await call(`/v1/sentences/${source.sentence_id}`, { headers: headers(false) });
    $("source-where").textContent = `${s.repository}/${s.path} · lines ${s.line_start}-${s.line_end}` +
      (s.heading ? ` · ${s.heading}` : "") + (s.git_commit ? ` · commit ${s.git_commit.slice(0, 12)}` : "");
    for (const n of s.before) context.append(el("p", n.text));
    context.append(el("p", s.text, "hit"));
    for (const n of s.after) context.append(el("p", n.text));
  } catch (error) {
    $("source-where").textContent = error.message;
  }
}

async function ask(event) {
  event.preventDefault();
  showError("");
  const repos = $("repos").value.split(",").map((r) => r.trim()).filter(Boolean);
  const body = { question: $("question").value, budget: $("budget").value };
  if (repos.length) body.filters = { repositories: repos };
  $("ask").disabled = true;
  try {
    renderAnswer(await call("/v1/answers", { method: "POST", headers: headers(true), body: JSON.stringify(body) }));
  } catch (error) {
    showError(error.message);
  } finally {
    $("ask").disabled = false;
  }
}

async function refreshStatus() {
  const strip = $("status-strip");
  try {
    const status = await call("/v1/status", { headers: headers(false) });
    const t = status.total;
    const draining = t.backlog_size > 0 ? ` · embedding ${Math.round(t.embedded_per_second)}/s` +
      (t.backlog_eta_seconds == null ? "" : `, about ${Math.ceil(t.backlog_eta_seconds)} s left`) : "";
    strip.textContent = `backlog ${t.backlog_size} · oldest ${Math.round(t.backlog_oldest_age_seconds)} s · ` +
      `${t.sentences} sentences · ${Math.round(t.embedded_share * 100)}% embedded` + draining;
    strip.classList.toggle("warn", t.backlog_oldest_age_seconds > 300);
    if (t.backlog_size > 0) setTimeout(refreshStatus, 3000); // watch the backlog drain
  } catch (error) {
    strip.textContent = "status: " + error.message;
  }
}

document.addEventListener("DOMContentLoaded", () => {
  const key = $("api-key");
  key.value = localStorage.getItem("citeline-key") || "";
  key.addEventListener("change", () => {
    localStorage.setItem("citeline-key", key.value.trim());
    refreshStatus();
  });
  $("ask-form").addEventListener("submit", ask);
  refreshStatus();
  setInterval(refreshStatus, 10000);
});
