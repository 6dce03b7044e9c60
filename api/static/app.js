// The page's core: calling the API, asking a question, reading the clauses and a source in context. Plain
// DOM, no framework, no build step. Every value from the API is inserted with textContent (or as an href that
// must be http(s)), never as HTML, so indexed Markdown cannot inject markup into the page. search.js and
// panels.js build on the helpers exported as `window.citeline`.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);

  function headers(json) {
    const h = { Accept: "application/json" };
    if (json) h["Content-Type"] = "application/json";
    const key = $("api-key").value.trim();
    if (key) h.Authorization = "Bearer " + key;
    return h;
  }

  async function call(path, options) {
    const response = await fetch(path, { headers: headers(false), ...options });
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

  // A link to the cited lines on the forge, or null when the API gave none (no forge known: never guessed).
  function forgeLink(item, label) {
    if (!item.link || !/^https?:\/\//.test(item.link)) return null;
    const a = el("a", label || "on forge", "forge");
    a.href = item.link;
    a.target = "_blank";
    a.rel = "noopener noreferrer";
    a.setAttribute("aria-label", `Open ${item.path} ${linesWord(item)} ${lines(item)} on the forge`);
    return a;
  }

  // A line range as `citeline ask` prints it: "269" for one line, "120-127" for several.
  function lines(item) {
    return item.line_start === item.line_end ? `${item.line_start}` : `${item.line_start}-${item.line_end}`;
  }

  function linesWord(item) {
    return item.line_start === item.line_end ? "line" : "lines";
  }

  // A unit's text as the page shows it: a code block (or any text with line breaks) in monospace with its
  // line breaks kept, a sentence as a paragraph.
  function unitText(item, className) {
    const code = item.kind === "code" || (item.text || "").includes("\n");
    const node = el(code ? "pre" : "p", item.text, className);
    if (code) node.classList.add("code");
    return node;
  }

  function showError(message) {
    $("error").textContent = message;
    $("error").hidden = !message;
  }

  // Notes that begin with "warning: " say why an answer may be weak (engine.caveats): shown as a banner.
  const WARNING = "warning: ";

  function renderWarnings(notes) {
    const warnings = (notes || []).filter((n) => n.startsWith(WARNING)).map((n) => n.slice(WARNING.length));
    const banner = $("answer-warnings");
    banner.replaceChildren(...warnings.map((w) => el("p", w)));
    banner.hidden = !warnings.length;
  }

  // Why a near passage was not used, in plain words: what happened to it and its numbers, as `citeline ask`
  // prints them (reasons.js, the copy of engine/reasons.py); the stage and the engine's reason go in the
  // element's title.
  function refusal(near) {
    const head = near.stage || "not proposed";
    const reason = near.reason || "";
    const { score, threshold } = near;
    if (score === null || score === undefined || threshold === null || threshold === undefined) {
      return `${head}: ${reason}`;
    }
    const measure = near.measure || near.stage;
    const limit = measure === "contradiction" ? "limit" : "threshold";
    const shown = score.toFixed(2);
    if (!near.stage) return `${head}: ${measure} ${shown}, ${limit} ${threshold}`;
    if (!reason.includes(shown)) return `${head}: ${reason} (${measure} ${shown}, ${limit} ${threshold})`;
    if (reason.includes(String(threshold))) return `${head}: ${reason}`;
    return `${head}: ${reason}; ${measure} ${limit} ${threshold}`;
  }

  function sourceLink(source, text) {
    const link = el("a", text, "source-link");
    link.href = "#source";
    if (source.state) link.classList.add("state-" + source.state);
    link.dataset.sentenceId = source.sentence_id ?? "";
    link.title = source.text;
    link.addEventListener("click", (event) => {
      event.preventDefault();
      showSource(source);
    });
    return link;
  }

  // The passages that came closest when no clause was verified: set apart from citations, never an answer.
  // The first SHOWN are open (engine.passages.NEAREST); the rest of what search found folds below them.
  const SHOWN = 5;

  function nearItem(near) {
    const item = el("li", null, "near");
    const where = el("div", null, "near-where");
    where.append(sourceLink(near, `${near.repository ? near.repository + "/" : ""}${near.path}:${lines(near)}`));
    if (near.heading) where.append(" ", el("span", near.heading, "heading"));
    const forge = forgeLink(near);
    if (forge) where.append(" ", forge);
    const why = el("p", "Not used: " + window.citelineReasons.plainReason(near), "near-why");
    why.title = refusal(near);
    item.append(where);
    // A passage that depends on the unit before it ("It just works!") is shown after that unit.
    if (near.context) item.append(unitText(near.context, "near-text near-context"));
    item.append(unitText(near, "near-text"), why);
    return item;
  }

  function renderNearest(nearest) {
    const section = $("nearest");
    const more = $("nearest-more");
    section.hidden = !nearest.length;
    $("nearest-list").replaceChildren(...nearest.slice(0, SHOWN).map(nearItem));
    const rest = nearest.slice(SHOWN);
    $("nearest-more-list").replaceChildren(...rest.map(nearItem));
    $("nearest-more-list").start = SHOWN + 1;
    $("nearest-more-summary").textContent = `${rest.length} more that search found`;
    more.hidden = !rest.length;
    more.open = false;
  }

  function renderRounds(trace) {
    const roundList = $("rounds-list");
    roundList.replaceChildren();
    for (const round of trace) {
      const rejected = round.rejected || [];
      const text = `queries: ${(round.queries || []).join(" | ")} · accepted ${(round.accepted || []).length}` +
        ` · rejected ${rejected.length}`;
      const item = el("li", text);
      if (rejected.length) {
        const why = el("ul", null, "rejected");
        for (const r of rejected) why.append(el("li", `${r.clause} — ${r.stage ? r.stage + ": " : ""}${r.reason}`));
        item.append(why);
      }
      roundList.append(item);
    }
  }

  function clearSource() {
    $("source").hidden = true;
    $("source-where").textContent = "";
    $("source-context").replaceChildren();
    setForge(null);
  }

  const MEMORY = "from the team's memory"; // daemon/answering.py MEMORY

  // The answer's own address (`/?answer=ID`, loaded from the answer store), to share; none for an answer the
  // engine did not store.
  function renderShare(id) {
    $("answer-share").hidden = !id;
    $("answer-link").href = id ? "/?answer=" + encodeURIComponent(id) : "#";
  }

  function renderAnswer(answer) {
    $("answer").hidden = false;
    $("answer").dataset.status = answer.status;
    clearSource(); // the source panel shows only what this answer cites, once opened
    const rounds = (answer.trace || []).length;
    $("answer-meta").textContent = `${answer.status} · route ${answer.route} · budget ${answer.budget} · ` +
      `${rounds} round${rounds === 1 ? "" : "s"}` + (answer.cached ? " · served from the answer store" : "") +
      (answer.id ? ` · id ${answer.id}` : "");
    renderShare(answer.id);
    $("answer-read-as").textContent = answer.read_as ? `Read as: ${answer.read_as}` : "";
    $("answer-read-as").hidden = !answer.read_as;
    $("answer-reason").textContent = answer.reason || "";
    $("answer-reason").hidden = !answer.reason;
    renderWarnings(answer.notes);
    const list = $("clauses");
    list.replaceChildren();
    list.hidden = !(answer.clauses || []).length;
    for (const clause of answer.clauses || []) {
      const item = el("li", null, "clause");
      item.append(el("span", clause.clause, "clause-text"));
      item.append(el("span", `${Math.round(clause.confidence * 100)}%`, "confidence"));
      // A sentence the team accepted for an earlier question, marked in the words `citeline ask` prints.
      if (clause.chosen_by === "team") {
        const asked = (clause.remembered || {}).question;
        item.append(el("div", MEMORY + (asked ? `: accepted for "${asked}"` : ""), "memory meta"));
      }
      // Each cited source with its place and its text: the answer's content, code and lists included.
      const sources = el("div", null, "sources");
      for (const source of clause.sources || []) {
        const cite = el("span", null, "cite");
        // Named as a closest passage is: repository/path:lines, then its heading.
        const where = `${source.repository ? source.repository + "/" : ""}${source.path}:${lines(source)}`;
        cite.append(sourceLink(source, where));
        if (source.heading) cite.append(" ", el("span", source.heading, "heading"));
        const forge = forgeLink(source);
        if (forge) cite.append(" ", forge);
        const cited = el("div", null, "cited");
        cited.append(cite, unitText(source, "cited-text"));
        sources.append(cited);
      }
      item.append(sources);
      list.append(item);
    }
    renderNearest(answer.clauses && answer.clauses.length ? [] : answer.nearest || []);
    $("rounds-summary").textContent = `Rounds (${rounds})`;
    renderRounds(answer.trace || []);
  }

  function setForge(item) {
    const forge = $("source-forge");
    const ok = Boolean(item && item.link && /^https?:\/\//.test(item.link));
    forge.hidden = !ok;
    if (ok) $("source-link").href = item.link;
  }

  // The source among its neighbours; `source` is a citation or a search hit (both carry sentence_id, path,
  // lines and, when a forge is known, link).
  async function showSource(source) {
    const aside = $("source");
    aside.hidden = false;
    const context = $("source-context");
    context.replaceChildren();
    setForge(source);
    const cited = (why) => {
      $("source-where").textContent = `${source.path}:${lines(source)} (${why})`;
      context.replaceChildren(unitText(source, "hit"));
    };
    if (source.sentence_id === null || source.sentence_id === undefined || source.state === "deleted") {
      cited("deleted since cited");
      return;
    }
    try {
      const s = await call(`/v1/sentences/${source.sentence_id}`);
      if (aside.hidden) return; // a new answer cleared the panel meanwhile
      $("source-where").textContent = `${s.repository}/${s.path} · ${linesWord(s)} ${lines(s)}` +
        (s.heading ? ` · ${s.heading}` : "") + (s.git_commit ? ` · commit ${s.git_commit.slice(0, 12)}` : "");
      for (const n of s.before) context.append(unitText(n));
      context.append(unitText(s, "hit"));
      for (const n of s.after) context.append(unitText(n));
    } catch (error) {
      if (source.state === "changed") cited("its file changed since cited; this is the cited text");
      else $("source-where").textContent = error.message;
    }
  }

  const listeners = [];

  async function askQuestion(body) {
    showError("");
    $("ask").disabled = true;
    try {
      const answer = await call("/v1/answers", { method: "POST", headers: headers(true), body: JSON.stringify(body) });
      renderAnswer(answer);
      for (const listener of listeners) listener(answer);
    } catch (error) {
      showError(error.message);
    } finally {
      $("ask").disabled = false;
    }
  }

  function ask(event) {
    event.preventDefault();
    const repos = $("repos").value.split(",").map((r) => r.trim()).filter(Boolean);
    const body = { question: $("question").value, budget: $("budget").value };
    if (repos.length) body.filters = { repositories: repos };
    askQuestion(body);
  }

  // A stored answer by its id, as `/?answer=ID` opens it: the same rendering as a fresh one.
  async function showStoredAnswer(id) {
    showError("");
    if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id)) {
      showError(`not an answer id: ${id}`);
      return;
    }
    try {
      const answer = await call(`/v1/answers/${encodeURIComponent(id)}`);
      $("question").value = answer.question;
      renderAnswer(answer);
      for (const listener of listeners) listener(answer);
    } catch (error) {
      showError(error.message);
    }
  }

  // The page opened on a link: `/?answer=ID` shows that stored answer, `/?q=QUESTION` (with `budget=` and
  // `repo=` optional, repeatable) asks it at once.
  function openLinked() {
    const params = new URLSearchParams(window.location.search);
    const id = (params.get("answer") || "").trim();
    if (id) {
      showStoredAnswer(id);
      return;
    }
    const question = (params.get("q") || "").trim();
    if (!question) return;
    $("question").value = question;
    const budget = params.get("budget");
    if (["low", "mid", "high"].includes(budget)) $("budget").value = budget;
    const repos = params.getAll("repo").flatMap((r) => r.split(",")).map((r) => r.trim()).filter(Boolean);
    $("repos").value = repos.join(", ");
    const body = { question, budget: $("budget").value };
    if (repos.length) body.filters = { repositories: repos };
    askQuestion(body);
  }

  window.citeline = {
    $, call, el, forgeLink, headers, lines, showSource, askQuestion, clearSource,
    onAnswered: (listener) => listeners.push(listener),
  };

  document.addEventListener("DOMContentLoaded", () => {
    const key = $("api-key");
    key.value = sessionStorage.getItem("citeline-key") || "";
    key.addEventListener("change", () => {
      sessionStorage.setItem("citeline-key", key.value.trim());
      document.dispatchEvent(new Event("citeline:key"));
      if ($("answer").hidden) openLinked(); // a linked question refused for want of a key: ask it now
    });
    $("ask-form").addEventListener("submit", ask);
    openLinked();
  });
})();
