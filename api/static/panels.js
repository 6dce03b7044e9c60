// The panels that keep themselves current: the status strip, freshness per repository, and the history of
// stored answers. One loop polls /v1/status (every 2 s while a backlog drains, else every 5 s); when the index
// changed since the last poll it refreshes the history and tells the search box ("citeline:index-changed").
"use strict";

(() => {
  const { $, call, el, askQuestion, onAnswered } = window.citeline;
  const LEVEL_WORDS = { ok: "", amber: "behind", red: "far behind" };
  const FRESHNESS_WORDS = { fresh: "sources live", changed: "source changed", deleted: "source deleted" };
  const STATUS_WORDS = { answer: "answered", insufficient: "insufficient", fail: "failed" };
  let signature = null;
  let timer = null;

  function duration(seconds) {
    const s = Math.max(0, Math.round(seconds));
    if (s < 60) return `${s} s`;
    if (s < 3600) return `${Math.floor(s / 60)} min` + (s % 60 ? ` ${s % 60} s` : "");
    return `${Math.floor(s / 3600)} h` + (s % 3600 >= 60 ? ` ${Math.floor((s % 3600) / 60)} min` : "");
  }

  function ago(iso) {
    if (!iso) return "never";
    const then = Date.parse(iso);
    return Number.isNaN(then) ? iso : `${duration((Date.now() - then) / 1000)} ago`;
  }

  function level(figures, thresholds) {
    if (!figures.backlog_size || !thresholds) return "ok";
    const age = figures.backlog_oldest_age_seconds;
    if (age >= thresholds.ready_max_backlog_age_seconds) return "red";
    return age >= thresholds.warn_backlog_age_seconds ? "amber" : "ok";
  }

  function embedding(figures) {
    if (!figures.backlog_size) return `${Math.round(figures.embedded_share * 100)}% embedded`;
    const rate = `${figures.embedded_per_second.toFixed(1)}/s`;
    const eta = figures.backlog_eta_seconds == null ? "no progress" : `about ${duration(figures.backlog_eta_seconds)} left`;
    return `${rate}, ${eta}`;
  }

  function row(name, figures, thresholds, lastChange) {
    const state = level(figures, thresholds);
    const tr = el("tr", null, "level-" + state);
    tr.dataset.repository = name;
    tr.dataset.level = state;
    const head = el("th", name);
    head.scope = "row";
    tr.append(head, el("td", String(figures.documents)), el("td", String(figures.sentences)),
      el("td", String(figures.backlog_size)));
    const oldest = el("td", figures.backlog_size ? duration(figures.backlog_oldest_age_seconds) : "—", "oldest");
    if (LEVEL_WORDS[state]) oldest.append(" ", el("strong", LEVEL_WORDS[state], "level-word"));
    tr.append(oldest, el("td", embedding(figures)));
    const changed = el("td", lastChange === undefined ? "" : ago(lastChange));
    if (lastChange) changed.title = lastChange;
    tr.append(changed);
    const labels = ["", "Docs", "Sentences", "Backlog", "Oldest", "Embedding", "Last change"];
    [...tr.children].forEach((cell, i) => { if (labels[i]) cell.dataset.label = labels[i]; });
    return tr;
  }

  function renderFreshness(status) {
    const thresholds = status.thresholds;
    const rows = status.repositories.map((r) => row(r.repository, r, thresholds, r.last_change));
    if (status.repositories.length > 1) rows.push(row("all", status.total, thresholds, undefined));
    $("freshness-rows").replaceChildren(...rows);
    renderSkipped(status.skipped || [], status.total.skipped_files || 0);
    $("freshness-note").textContent = thresholds
      ? `Backlog age turns amber past ${duration(thresholds.warn_backlog_age_seconds)}` +
        ` and red past ${duration(thresholds.ready_max_backlog_age_seconds)}.`
      : "";
  }

  function renderSkipped(skipped, count) {
    $("skipped").hidden = !count;
    $("skipped-summary").textContent = `Skipped files (${count}): kept at their previous version`;
    $("skipped-list").replaceChildren(...skipped.map((k) =>
      el("li", `${k.repository}/${k.path}: ${k.reason}` + (k.detail ? ` (${k.detail})` : ""))));
  }

  function renderStrip(status) {
    const t = status.total;
    const draining = t.backlog_size > 0 ? ` · embedding ${Math.round(t.embedded_per_second)}/s` +
      (t.backlog_eta_seconds == null ? "" : `, about ${Math.ceil(t.backlog_eta_seconds)} s left`) : "";
    const strip = $("status-strip");
    strip.textContent = `backlog ${t.backlog_size} · oldest ${Math.round(t.backlog_oldest_age_seconds)} s · ` +
      `${t.sentences} sentences · ${Math.round(t.embedded_share * 100)}% embedded` + draining;
    strip.classList.toggle("warn", level(t, status.thresholds) !== "ok");
  }

  function renderHistory(answers) {
    const list = $("history-list");
    if (!answers.length) {
      list.replaceChildren(el("li", "No questions asked yet.", "meta"));
      return;
    }
    list.replaceChildren(...answers.map((a) => {
      const item = el("li", null, `stored status-${a.status} freshness-${a.freshness}`);
      item.dataset.answerId = a.id;
      item.dataset.status = a.status;
      item.dataset.freshness = a.freshness;
      item.dataset.times = a.times || 1;
      item.append(el("span", STATUS_WORDS[a.status] || a.status, "badge status"));
      // Only an answer cites sources whose freshness means anything.
      if (a.status === "answer") item.append(" ", el("span", FRESHNESS_WORDS[a.freshness], "badge freshness"));
      item.append(" ", el("span", a.question, "question"));
      const when = new Date(a.created_at);
      const times = (a.times || 1) > 1 ? ` · asked ${a.times} times, last` : "";
      item.append(el("span", ` ${a.clauses} clause${a.clauses === 1 ? "" : "s"}${times} · ` +
        `${Number.isNaN(when.getTime()) ? a.created_at : when.toLocaleString()}`, "meta"));
      const again = el("button", "Ask again", "again");
      again.type = "button";
      again.setAttribute("aria-label", `Ask again: ${a.question}`);
      again.addEventListener("click", () => {
        $("question").value = a.question;
        const repos = (a.filters && a.filters.repositories) || [];
        $("repos").value = repos.join(", ");
        if (a.budget) $("budget").value = a.budget;
        const body = { question: a.question, budget: a.budget || "mid" };
        if (repos.length) body.filters = { repositories: repos };
        askQuestion(body);
      });
      item.append(" ", again);
      return item;
    }));
  }

  async function refreshHistory() {
    try {
      renderHistory((await call("/v1/history?limit=20")).answers);
      $("history-note").textContent = "Questions asked, newest first, each with its latest answer.";
    } catch (error) {
      $("history-note").textContent = "history: " + error.message;
    }
  }

  async function refresh() {
    clearTimeout(timer);
    let delay = 5000;
    try {
      const status = await call("/v1/status");
      renderStrip(status);
      renderFreshness(status);
      const now = JSON.stringify(status.repositories.map((r) => [r.repository, r.documents, r.sentences, r.last_change]));
      if (signature !== null && now !== signature) {
        document.dispatchEvent(new Event("citeline:index-changed"));
        refreshHistory();
      }
      signature = now;
      if (status.total.backlog_size > 0) delay = 2000;
    } catch (error) {
      $("status-strip").textContent = "status: " + error.message;
      $("status-strip").classList.remove("warn");
    }
    timer = setTimeout(refresh, delay);
  }

  onAnswered(refreshHistory);
  document.addEventListener("citeline:key", () => {
    signature = null;
    refresh();
    refreshHistory();
  });
  document.addEventListener("DOMContentLoaded", () => {
    refresh();
    refreshHistory();
  });
})();
