"""Replay the memory's choice (`engine.memory.recall`) on a `bench/feedback_memory.py --dump`, offline, for
many `MemoryConfig`s at once: which accepted sentences each wording would be offered.

    python bench/memory_replay.py DUMP [--embedder LABEL=SPEC] [--matcher DIR] [--cache FILE]
        [--floors F,...] [--leads F,...] [--max-clauses N,...] [--answer-weights W,...] [--both-ways B,...]

The run accepted each fed row's mined answer for its `plain` question, then asked `situation`, `terse` and
the `near_miss` within the row's repository. Here every wording is compared with every fed plain question of
its repository, as the store would (the embedder's cosine, the closest `candidates`), the matcher scores them
(once; `--cache` keeps the scores), and `recall` itself chooses under each config: the real rule, not a copy.
With `--answer-weights`, the relevance model also rates each candidate's accepted sentence for the wording
(the sentence as the dump holds it, without the heading path the engine reads it under), once, kept in the
cache too, and `recall` weighs it as the engine does (`MemoryConfig.answer_weight`, `answer_gate`).
`--both-ways 0,1` replays the matcher read one way and both ways round (`MemoryConfig.both_ways`); the
other order's scores are kept in the cache too (under "back").
An offered sentence counts as served (vouched sentences are raised to the verifier's floors; `--floors` sets
the offer and vouch floors together). Per style it prints:
- own: the row's accepted sentence is offered;
- hit~: own, or the run's answer cited it by retrieval alone (the remembered hit, as the run counts it);
- other: another row's accepted sentence is offered (an answer to another question);
- near: the near miss is offered the row's sentence (wrong from memory), and + another row's sentence.
The first line compares the replay with the run's own other-question count at the run's config.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `training` is not an installed package

from engine.feedback import question_key
from engine.memory import MemoryConfig, recall
from engine.search import Filters
from indexer.remembered import Remembered

STYLES = ("situation", "terse", "near")


def _text(row: dict[str, Any], style: str) -> str:
    return str(row["near_miss"] if style == "near" else row["asked"][style])


def scores(fed: list[dict[str, Any]], embedder: str, matcher: str | None, candidates: int) -> dict[str, Any]:
    """Per (row, style): the closest fed rows of its repository by cosine, and the matcher's score of each."""
    from engine.crossencoders import load_question_match
    from indexer.embedder import load_embedding_model
    from training.embedder_eval import embedder_spec

    _, name, runtime = embedder_spec(embedder)
    model = load_embedding_model(name, runtime)
    match = load_question_match(matcher)
    plain = np.asarray(model.encode([r["asked"]["plain"] for r in fed]))
    out: dict[str, Any] = {}
    for i, row in enumerate(fed):
        same = [j for j, other in enumerate(fed) if other["name"] == row["name"]]
        wordings = [_text(row, style) for style in STYLES]
        for style, vector in zip(STYLES, np.asarray(model.encode(wordings)), strict=True):
            cosine = {j: float(vector @ plain[j]) for j in same}
            near = sorted(same, key=lambda j: -cosine[j])[:candidates]
            read = match.score(_text(row, style), [fed[j]["asked"]["plain"] for j in near]) if near else []
            out[f"{i}/{style}"] = [[j, cosine[j], float(s)] for j, s in zip(near, read, strict=True)]
    return out


def backward(fed: list[dict[str, Any]], cache: dict[str, Any], matcher: str | None) -> dict[str, list[float]]:
    """Per (row, style): the matcher's score of each candidate's plain question read first, the wording
    second (the other order from `scores`)."""
    from engine.crossencoders import load_question_match

    match = load_question_match(matcher)
    out: dict[str, list[float]] = {}
    for key, cached in cache.items():
        i, style = key.split("/")
        text = _text(fed[int(i)], style)
        out[key] = [match.score(fed[j]["asked"]["plain"], [text])[0] for j, *_ in cached]
    return out


def rated(fed: list[dict[str, Any]], cache: dict[str, Any]) -> dict[str, Any]:
    """`cache` with the relevance model's score of (wording, each candidate's accepted sentence) appended."""
    from engine.crossencoders import load_relevance

    model = load_relevance()
    out: dict[str, Any] = {}
    for key, cached in cache.items():
        i, style = key.split("/")
        texts = [fed[j]["positive_text"] for j, *_ in cached]
        read = model.score(_text(fed[int(i)], style), texts) if texts else []
        out[key] = [[*entry[:3], float(r)] for entry, r in zip(cached, read, strict=True)]
    return out


class _Store:
    """The store's answer for one wording, from the cached cosines (the closest first)."""

    def __init__(self, pairs: list[Remembered]) -> None:
        self.pairs = pairs

    def remembered(self, *_: Any) -> list[Remembered]:
        return self.pairs


class _Matcher:
    """The cached matcher scores, by earlier question: the wording read first (`forward`), or, asked with an
    earlier question first, that order's (`backward`)."""

    def __init__(self, wording: str, forward: dict[str, float], backward: dict[str, float]) -> None:
        self.wording, self.forward, self.backward = wording, forward, backward

    def score(self, query: str, passages: Any) -> list[float]:
        if query == self.wording:
            return [self.forward[p] for p in passages]
        return [self.backward[query] for _ in passages]


class _Rater:
    """The cached relevance scores of the wording against each candidate's accepted sentence, by sentence
    id: `recall`'s `rate`, so that the engine's own rule weighs them (`answer_weight`, `answer_gate`)."""

    def __init__(self, by_sentence: dict[int, float]) -> None:
        self.by_sentence = by_sentence

    def __call__(self, question: str, sentence_ids: Any) -> dict[int, float]:
        return {i: self.by_sentence[i] for i in sentence_ids}


Lookup = tuple[_Store, _Matcher, _Rater | None]


def lookups(fed: list[dict[str, Any]], cache: dict[str, Any], back: dict[str, Any]) -> dict[str, Lookup]:
    """Per (row, style) key of `cache`: what the store returns (the fed pairs by cosine), the matcher's cached
    scores and, when the cache holds them, the relevance model's (`rated`), built once for every config."""
    now = datetime.now(UTC)
    out: dict[str, Lookup] = {}
    for key, cached in cache.items():
        pairs = [
            Remembered(
                fed[j]["asked"]["plain"],
                fed[j]["plain"]["id"],
                now,
                fed[j]["sid"],
                cosine,
                question_key=question_key(fed[j]["asked"]["plain"]),
            )
            for j, cosine, *_ in cached
        ]
        i, style = key.split("/")
        plain = [fed[e[0]]["asked"]["plain"] for e in cached]
        matcher = _Matcher(
            _text(fed[int(i)], style),
            {p: e[2] for p, e in zip(plain, cached, strict=True)},
            dict(zip(plain, back.get(key, []), strict=False)),
        )
        rate = _Rater({fed[e[0]]["sid"]: e[3] for e in cached}) if all(len(e) > 3 for e in cached) else None
        out[key] = (_Store(pairs), matcher, rate)
    return out


def figures(fed: list[dict[str, Any]], looked: dict[str, Lookup], config: MemoryConfig) -> dict[str, int]:
    """own / hit / other per style, and near, under `config` (`recall` itself choosing)."""
    counts = {"near": 0, "near other": 0}
    counts |= {f"{k} {s}": 0 for k in ("own", "hit", "other") for s in STYLES[:2]}
    for i, row in enumerate(fed):
        for style in STYLES:
            store, matcher, rate = looked[f"{i}/{style}"]
            text = _text(row, style)
            chosen = recall(store, text, [1.0], Filters(), config, matcher, rate)  # type: ignore[arg-type]
            ids = [r.sentence_id for r in chosen]
            mine = row["sid"] in ids
            if style == "near":
                counts["near"] += mine
                counts["near other"] += any(s != row["sid"] for s in ids)
                continue
            by_retrieval = row[style]["hit"] and not row[style]["team"]
            counts[f"own {style}"] += mine
            counts[f"hit {style}"] += mine or by_retrieval
            counts[f"other {style}"] += any(s != row["sid"] for s in ids)
    return counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dump", type=Path)
    ap.add_argument("--embedder", default="default=", help="LABEL=SPEC[@RUNTIME], the run's")
    ap.add_argument("--matcher", help="a question matcher's folder (default: the shipped one)")
    ap.add_argument("--cache", type=Path, help="keep the cosines and scores here (reused when present)")
    ap.add_argument("--floors", default="0.2,0.3,0.5", help="offer and vouch floors on the matcher's score")
    ap.add_argument("--leads", default="-1,0,0.02,0.05,0.1,0.2", help="MemoryConfig.min_lead (-1: none)")
    ap.add_argument("--max-clauses", default="2", help="MemoryConfig.max_clauses, each")
    ap.add_argument("--both-ways", default="1", help="MemoryConfig.both_ways, each (0 or 1)")
    ap.add_argument(
        "--answer-weights",
        default=str(MemoryConfig().answer_weight),
        help="MemoryConfig.answer_weight, each (0: the matcher alone; default: the engine's)",
    )
    args = ap.parse_args()
    lines = args.dump.read_text(encoding="utf-8").splitlines()
    fed = [r for r in map(json.loads, lines[1:]) if "situation" in r]
    base = MemoryConfig()
    if args.cache is not None and args.cache.exists():
        cache = json.loads(args.cache.read_text(encoding="utf-8"))
    else:
        cache = scores(fed, args.embedder, args.matcher, base.candidates)
    back = cache.pop("back", {})
    weights = [float(x) for x in args.answer_weights.split(",")]
    if any(weights) and any(len(e) < 4 for entries in cache.values() for e in entries):
        cache = rated(fed, cache)
    ways = [bool(int(x)) for x in args.both_ways.split(",")]
    if any(ways) and not back:
        back = backward(fed, cache, args.matcher)
    if args.cache is not None:
        args.cache.write_text(json.dumps({**cache, "back": back}), encoding="utf-8")
    ran = sum(any(a != r["plain"]["id"] for a in r[s].get("team_from", [])) for r in fed for s in STYLES[:2])
    print(f"{len(fed)} fed rows; the run's answers holding another question's sentence: {ran}")
    print(
        "ways weight floor  lead   max  | own sit/terse | hit~ sit / terse | other sit/terse | near + other"
    )
    n = len(fed)
    looked = lookups(fed, cache, back)
    for both in ways:
        for weight in weights:
            _grid(fed, looked, args, replace(MemoryConfig(), both_ways=both, answer_weight=weight), n)


def _grid(
    fed: list[dict[str, Any]], looked: dict[str, Lookup], args: argparse.Namespace, base: MemoryConfig, n: int
) -> None:
    """One line per (floor, lead, max clauses) at one answer weight and way of reading (`base`)."""
    for floor in (float(x) for x in args.floors.split(",")):
        for lead in (float(x) for x in args.leads.split(",")):
            for most in (int(x) for x in args.max_clauses.split(",")):
                config = replace(base, min_match=floor, vouch_match=floor, min_lead=lead, max_clauses=most)
                c = figures(fed, looked, config)
                ways = 2 if base.both_ways else 1
                print(
                    f"{ways:4d} {base.answer_weight:5.2f} {floor:5.2f} {lead:5.2f} {most:3d} "
                    f"| {c['own situation']:4d} {c['own terse']:4d}    "
                    f"| {c['hit situation'] / n:.3f} / {c['hit terse'] / n:.3f}  "
                    f"| {c['other situation']:4d} {c['other terse']:4d}      "
                    f"| {c['near']} + {c['near other']}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
