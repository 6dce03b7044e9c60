// The docs team's loop on the page: a helpful / not helpful pair on each answer, "this answers it" on each
// cited source and closest passage, a short confirmation of what was recorded, and the Gaps panel (what the
// docs did not answer, wordings grouped, most asked first). Built on app.js's helpers (`window.citeline`);
// every value from the API is inserted with textContent, never as HTML.
"use strict";

(() => {
  const { $, call, el } = window.citeline;

  function confirm(text) {
    $("feedback-status").textContent = text;
  }

  async function send(answerId, body) {
    try {
      const record = await call(`/v1/answers/${encodeURIComponent(answerId)}/feedback`, {
        method: "POST",
        headers: { ...window.citeline.headers(true) },
        body: JSON.stringify(body),
      });
      const parts = [record.helpful ? "Recorded: helpful" : "Recorded: not helpful"];
      if (record.accepted.length) parts.push(`accepted sentence ${record.accepted.join(", ")} for this question`);
      if (record.rejected.length) parts.push(`will not serve sentence ${record.rejected.join(", ")} from memory for it`);
      // A key without the teach property only votes: nothing is accepted or rejected for everyone.
      if (record.teaching === false) {
        parts.push("counted as a vote only: this API key may not accept sentences (it lacks the teach property)");
      } else if (record.helpful && !record.accepted.length) {
        // Helpful feedback with no sentence accepts the cited ones; an answer that cites none teaches nothing.
        parts.push("accepted no sentence for this question: the answer cites none" +
          ((record.nearest_ids || []).length ? '; press "this answers it" on the closest passage that does' : ""));
      }
      confirm(parts.join("; ") + ".");
      loadGaps();
    } catch (error) {
      confirm(`Feedback not recorded: ${error.message}`);
    }
  }

  function button(text, label, onClick) {
    const b = el("button", text, "feedback-button");
    b.type = "button";
    if (label) b.setAttribute("aria-label", label);
    b.addEventListener("click", onClick);
    return b;
  }

  function renderFeedback(answer) {
    const bar = $("feedback");
    confirm("");
    bar.hidden = !answer.id;
    if (!answer.id) return;
    $("feedback-helpful").onclick = () => send(answer.id, { helpful: true });
    $("feedback-unhelpful").onclick = () => send(answer.id, { helpful: false });
    // "this answers it" beside every cited source and closest passage that names a sentence
    for (const link of document.querySelectorAll("#clauses .source-link, #nearest .source-link")) {
      const id = Number(link.dataset.sentenceId);
      if (!id) continue;
      const holder = link.parentElement;
      if (holder.querySelector(".answers-it")) continue;
      const b = button("this answers it", `This passage answers the question: ${link.textContent}`, () =>
        send(answer.id, { helpful: true, sentence_ids: [id] }));
      b.classList.add("answers-it");
      holder.append(" ", b);
    }
  }

  // The kinds of gap in words (engine.gap_kinds), in the order the API lists them.
  const GAP_KINDS = {
    not_in_docs: "Not in the docs",
    near_miss: "Near miss",
    missed: "Missed: the docs answer it",
    unrated: "Unrated",
  };

  function gapPassage(passage) {
    const where = `${passage.repository || "?"}/${passage.path || "?"}` +
      (passage.line_start ? `:${passage.line_start}` : "");
    const note = passage.accepted
      ? `accepted by the team${passage.stale ? ", since changed" : ""}`
      : passage.rating === null ? "not rated" : `rated ${passage.rating}, floor ${passage.floor || 0}`;
    const block = el("div", null, "meta gap-passage");
    block.append(el("span", `${where} (${note}): `), el("q", passage.text));
    return block;
  }

  function gapItem(gap) {
    const item = el("li", null, "gap");
    item.dataset.kind = gap.kind || "unrated";
    const kinds = Object.entries(gap.kinds).map(([k, n]) => `${k} ${n}`).join(", ");
    item.append(el("span", `${gap.count}× `, "gap-count"), el("span", gap.question, "gap-question"));
    item.append(el("div", GAP_KINDS[gap.kind] || gap.kind || "Unrated", "gap-kind"));
    if (gap.passage) item.append(gapPassage(gap.passage));
    if (gap.page_changed) item.append(el("div", "Its closest page changed since it was last asked: ask it again.", "meta"));
    item.append(el("div", `${kinds} · last ${gap.last_asked.slice(0, 16).replace("T", " ")}`, "meta"));
    if (gap.closest) {
      const where = `${gap.closest.repository || ""}/${gap.closest.path}` +
        (gap.closest.heading ? ` · ${gap.closest.heading}` : "");
      item.append(el("div", `closest: ${where}`, "meta"));
    }
    const others = gap.wordings.filter((w) => w !== gap.question);
    if (others.length) item.append(el("div", `also asked: ${others.join(" · ")}`, "meta"));
    return item;
  }

  async function loadGaps() {
    try {
      const body = await call("/v1/gaps?limit=20");
      $("gaps-list").replaceChildren(...body.gaps.map(gapItem));
      $("gaps-note").textContent = body.gaps.length
        ? "What the docs did not answer: not in the docs first, then near misses and what citeline missed; most asked first within each."
        : "No gaps: every question asked was answered.";
    } catch (error) {
      $("gaps-note").textContent = `Gaps unavailable: ${error.message}`;
    }
  }

  window.citeline.onAnswered(renderFeedback);
  document.addEventListener("citeline:key", loadGaps);
  document.addEventListener("DOMContentLoaded", loadGaps);
})();
