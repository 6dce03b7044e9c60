// Why a closest passage was not used, in plain words: the page's copy of `plain_reason` in engine/reasons.py,
// which `citeline ask` prints, so both say the same (tests/test_reasons.py runs the two on the same passages
// and compares their words). Each kind names what happened, and its words never contradict its numbers: only
// a passage rated below the floor is called "not about your question". Loaded before app.js.
"use strict";

(() => {
  const HEADS = {
    not_read: "not read",
    not_chosen: "read, not chosen by the reader",
    below_floor: "rated as not about your question",
    near_miss: "read as a near miss",
    not_entailed: "not entailed",
    not_verified: "failed verification",
    contradicted: "contradicted",
  };
  const RANKED = ["not_read", "not_chosen"];
  const FLOORS = ["relevance", "answer_check"];

  const given = (value) => value !== null && value !== undefined;

  // The kind a stored answer that predates `reason_kind` gets from its stage and numbers (`reason_kind`).
  function kindOf(stage, measure, score, threshold) {
    if (!given(stage)) return given(score) && given(threshold) && score < threshold ? "below_floor" : "not_read";
    if (stage === "relevance") return measure === "answer_check" ? "near_miss" : "below_floor";
    if (stage === "entailment") return "not_entailed";
    if (stage === "contradiction" || stage === "conflict") return "contradicted";
    return "not_verified";
  }

  function ordinal(number) {
    if ([11, 12, 13].includes(number % 100)) return `${number}th`;
    return `${number}${{ 1: "st", 2: "nd", 3: "rd" }[number % 10] || "th"}`;
  }

  function plainReason(near) {
    const stage = near.stage;
    const measure = near.measure || near.stage;
    const { score, threshold, rank } = near;
    const known = Object.prototype.hasOwnProperty.call(HEADS, near.reason_kind || "");
    const kind = known ? near.reason_kind : kindOf(stage, measure, score, threshold);
    const details = [];
    if (RANKED.includes(kind) && Number.isInteger(rank) && rank > 0) details.push(`ranked ${ordinal(rank)}`);
    if (given(score) && given(threshold)) {
      const name = RANKED.includes(kind) ? "rated" : (measure || "score").replace(/_/g, " ");
      const bound = FLOORS.includes(measure) ? "floor" : measure === "contradiction" ? "limit" : "needed";
      details.push(`${name} ${score.toFixed(2)} (${bound} ${threshold.toFixed(2)})`);
    } else if (stage && near.reason) {
      details.push(String(near.reason));
    }
    return details.length ? `${HEADS[kind]}: ${details.join(", ")}` : HEADS[kind];
  }

  const reasons = { plainReason, ordinal };
  if (typeof module !== "undefined" && module.exports) module.exports = reasons;
  else window.citelineReasons = reasons;
})();
