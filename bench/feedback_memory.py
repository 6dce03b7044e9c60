"""The feedback loop's targets (#53), asked through the whole engine on docs questions in users' words.

    python bench/feedback_memory.py DOCS_FAQ [--role tune|heldout] [--limit N] [--workdir DIR]
        [--memory-floor F] [--vouch-floor F] [--sample N] [--p95-rows N] [--synthetic N]
        [--embedder LABEL=SPEC] [--matcher DIR [--match-floor F] [--match-vouch F]] [--match-cosine F]
        [--dump FILE]
    python bench/feedback_memory.py DOCS_FAQ --replay DUMP [--floors F,...] [--vouches F,...] [--matcher DIR]

DOCS_FAQ is `traindata/docs_faq`; the rows are `bench/docs_written.py`'s (`written_rows`), its pages and index
the same (`DIR/pages/NAME`, database `DIR/db-LABEL` of `--embedder`, default `default`: a workdir that bench
made is reused). Each row:
1. is asked in `plain` words, before any feedback (every row first, so no row is answered from another's);
2. gets helpful feedback naming the row's mined answer sentence (`engine.feedback.give_feedback`, what
   `POST /v1/answers/{id}/feedback` runs), on that plain answer;
3. is asked in `situation` and `terse` words (remembered hit: the answer cites the accepted sentence; from
   memory: the clause citing it was added by memory, `chosen_by` "team") and as its `near_miss` (wrong from
   memory: the near miss cites the accepted sentence from memory).
Then, on `--sample` rows: scoped (the `situation` words asked within every OTHER repository of the role, as a
key scoped to them asks: the accepted sentence must never be served), and stale (one word of the accepted
sentence changed in its page, re-indexed, `situation` asked again: never served from memory, and
`engine.gaps.find_gaps` lists the pair as stale; the pages are put back and re-indexed). Last, on `--p95-rows`
rows, with the feedback tables cleared: the plain answers again (they must cite what they cited before any
feedback) and their ms, each asked twice in turn, with none and with `--synthetic` accepted answers stored
(`save_feedback`, random question vectors of the embedder's model; none is close enough to be offered), which
of the two first alternating from question to question. After each such answer the memory's lookup alone
(`indexer.remembered.AcceptedAnswers.remembered`, as the engine calls it) is timed too.

The feedback and answer tables are cleared at the start and the end. Figures only; it asserts nothing.
`--replay` reads a `--dump` of a run with a low `--memory-floor` and `--vouch-floor 1.01` and replays other
floors on it (`replay`); the dump holds each wording's cosine to the accepted question.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import time
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchkit import mean, percentile, workspace
from docs_faq import _sync
from docs_faq_pages import ROLES, FaqRow, page_file, write_pages
from docs_written import Written, written_rows

from daemon.assembly import Engine, build_engine, model_names
from daemon.config import load_config
from engine.config import EngineConfig
from engine.feedback import give_feedback, question_key
from engine.gaps import find_gaps
from engine.memory import TEAM, MemoryConfig
from engine.search import Filters
from indexer.database import Connection, open_database
from indexer.embedder import load_embedding_model
from indexer.embedding_queue import EmbeddingWorker
from indexer.feedback import NewFeedback, save_feedback, sentence_refs
from indexer.reconcile import IndexOptions, Repository
from indexer.remembered import AcceptedAnswers
from training.embedder_eval import embedder_spec

TABLES = ("feedback_sentences", "accepted_answers", "feedback", "answers")
_POSITIVES = """
SELECT s.id, d.path, s.text FROM sentences s JOIN documents d ON d.id = s.document_id
JOIN repositories r ON r.id = d.repository_id WHERE r.name = %s AND d.path = ANY(%s) ORDER BY s.id
"""


def _clear(conn: Connection) -> None:
    for table in TABLES:
        conn.execute(f"DELETE FROM {table}")


class _Stored:
    """The synthetic accepted answers in the table or out of it, swapped between two answers of the timing:
    parked in a temporary table, the store truncated (no dead rows left to scan) and refilled from it. The
    table's vector indexes are dropped for the refill and built again after it, as they were (a build is
    several times faster than 10,000 inserts into HNSW)."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        conn.execute("CREATE TEMP TABLE parked_answers AS SELECT * FROM accepted_answers")
        self._in = True

    def put(self, stored: bool) -> None:
        if stored == self._in:
            return
        self._conn.execute("TRUNCATE accepted_answers")
        if stored:
            indexes = self._conn.execute(
                "SELECT indexname, indexdef FROM pg_indexes"
                " WHERE tablename = 'accepted_answers' AND indexdef LIKE '%USING hnsw%'"
            ).fetchall()
            for name, _ in indexes:
                self._conn.execute(f'DROP INDEX "{name}"')
            self._conn.execute(
                "INSERT INTO accepted_answers OVERRIDING SYSTEM VALUE SELECT * FROM parked_answers"
            )
            for _, definition in indexes:
                self._conn.execute(definition)
            self._conn.execute("ANALYZE accepted_answers")
        self._in = stored


def _lookup_ms(lookup: AcceptedAnswers, model: Any, question: str, repository: str) -> float:
    """The ms of the memory's lookup of `question` within `repository`, as the engine makes it."""
    vector = model.encode([question])[0].tolist()
    started = time.perf_counter()
    lookup.remembered(question_key(question), vector, (repository,), None, MemoryConfig().candidates)
    return 1000 * (time.perf_counter() - started)


def positive_id(conn: Connection, row: FaqRow) -> int | None:
    """The indexed sentence on the row's page that is its mined answer (`FaqRow.is_positive`), if any."""
    found = conn.execute(_POSITIVES, (row.name, list(row.paths))).fetchall()
    return next((int(i) for i, path, text in found if row.is_positive(path, text)), None)


def ask(engine: Engine, text: str, repositories: tuple[str, ...], sid: int | None) -> dict[str, Any]:
    """Ask `text` within `repositories`: its status, ms, cited (path, text), and whether it cites `sid`,
    from memory (`chosen_by` team) or at all, and the answers its remembered clauses came from."""
    started = time.perf_counter()
    answer = engine.answer(text, "mid", Filters(repositories=repositories))
    ms = 1000 * (time.perf_counter() - started)
    body = answer.to_dict()
    citing = [c for c in body["clauses"] if any(s.get("sentence_id") == sid for s in c["sources"])]
    return {
        "text": text,
        "id": answer.id,
        "status": body["status"],
        "ms": ms,
        "cited": sorted({(s["path"], s["text"]) for c in body["clauses"] for s in c["sources"]}),
        "hit": bool(citing),
        "team": any(c.get("chosen_by") == TEAM for c in citing),
        "any_team": any(c.get("chosen_by") == TEAM for c in body["clauses"]),
        "from_answers": [c["remembered"]["answer_id"] for c in body["clauses"] if c.get("remembered")],
        "team_from": [
            c["remembered"]["answer_id"]
            for c in body["clauses"]
            if c.get("chosen_by") == TEAM and c.get("remembered")
        ],
        "memory_refused": [
            f"{r.get('stage')}: {r['reason']}"
            for t in body["trace"]
            for r in t["rejected"]
            if r["reason"].startswith("remembered from answer")
        ],
    }


def changed_word(text: str, sentence: str) -> str | None:
    """`text` with one word of `sentence` changed: its longest word found exactly once in `text`."""
    for word in sorted(set(re.findall(r"[A-Za-z]{4,}", sentence)), key=lambda w: (-len(w), w)):
        found = list(re.finditer(rf"\b{word}\b", text))
        if len(found) == 1:
            return text[: found[0].start()] + "re" + word + text[found[0].end() :]
    return None


def _stale(
    conn: Connection,
    engine: Engine,
    sync: Any,
    work: Path,
    records: list[dict[str, Any]],
) -> dict[str, int]:
    """Change one word of each sampled accepted sentence, re-index, ask `situation` again; pages put back."""
    if not records:
        return {"sampled": 0, "edited": 0, "served from memory": 0, "listed stale in gaps": 0}
    hashes = {i: ref.hash for i, ref in sentence_refs(conn, [r["sid"] for r in records]).items()}
    originals: dict[Path, str] = {}
    edited: list[dict[str, Any]] = []
    try:
        for r in records:
            file = page_file(work / "pages" / r["name"], r["path"])
            originals.setdefault(file, file.read_text(encoding="utf-8"))
            text = changed_word(file.read_text(encoding="utf-8"), r["positive_text"])
            if text is not None:
                file.write_text(text, encoding="utf-8")
                edited.append(r)
        sync()
        live = sentence_refs(conn, [r["sid"] for r in edited])
        changed = [r for r in edited if r["sid"] not in live or live[r["sid"]].hash != hashes[r["sid"]]]
        for r in changed:
            r["stale_situation"] = ask(engine, r["asked"]["situation"], (r["name"],), r["sid"])
        gaps = find_gaps(conn, None, limit=100_000)
        listed = {a for g in gaps if g.kinds.get("stale", 0) > 0 for a in g.answer_ids}
    finally:
        for file, text in originals.items():
            file.write_text(text, encoding="utf-8")
        sync()
    served = sum(r["plain"]["id"] in r["stale_situation"]["from_answers"] for r in changed)
    return {
        "sampled": len(records),
        "edited": len(changed),
        "served from memory": served,
        "listed stale in gaps": sum(r["plain"]["id"] in listed for r in changed),
    }


def synthetic_pairs(conn: Connection, count: int, model: str, dimension: int, seed: int = 7) -> None:
    """Store `count` accepted answers through the store (`save_feedback`), each a made-up question on a
    random indexed sentence, with a random unit question vector of `model` (as if the engine embedded it)."""
    rng = random.Random(seed)
    ids = [int(r[0]) for r in conn.execute("SELECT id FROM sentences ORDER BY id LIMIT 5000").fetchall()]
    refs = list(sentence_refs(conn, ids).values())
    vocabulary = sorted({w.lower() for r in refs[:2000] for w in re.findall(r"[A-Za-z]{5,}", r.text)})
    with conn.transaction():
        for n in range(count):
            question = f"How do I {' '.join(rng.sample(vocabulary, 4))} ({n})?"
            ref = rng.choice(refs)
            new = NewFeedback(
                str(uuid.uuid4()), question, "answer", True, [ref], None, [ref.repository_id], [ref]
            )
            save_feedback(conn, new, question_key(question))
        conn.execute(
            "UPDATE accepted_answers a SET embedding_model = %s, question_embedding = v.vector FROM"
            " (SELECT b.id, x.values::vector AS vector FROM accepted_answers b CROSS JOIN LATERAL"
            " (SELECT array_agg(random() - 0.5) AS values FROM generate_series(1, %s) WHERE b.id > 0) x) v"
            " WHERE v.id = a.id",
            (model, dimension),
        )


def plain_cosines(model: Any, plain: list[str], others: dict[str, list[str]]) -> dict[str, list[float]]:
    """The cosine of each plain question to each of its other wordings, by wording (one encode of the plain
    questions): how the memory's lookup, on `model`, reads a rewording against the accepted question."""
    encoded = model.encode(plain)
    return {
        k: [float(a @ b) for a, b in zip(encoded, model.encode(v), strict=True)] for k, v in others.items()
    }


def _similarities(model: Any, fed: list[dict[str, Any]]) -> None:
    """Each fed row's cosine of its plain question (the accepted one) to its situation, terse and near-miss
    wordings, for `--replay`."""
    if not fed:
        return
    others = {
        k: [r["near_miss"] if k == "near" else r["asked"][k] for r in fed]
        for k in ("situation", "terse", "near")
    }
    for key, cosines in plain_cosines(model, [r["asked"]["plain"] for r in fed], others).items():
        for r, cosine in zip(fed, cosines, strict=True):
            r.setdefault("similarity", {})[key] = cosine


def _matched(matcher: str, fed: list[dict[str, Any]]) -> None:
    """Each fed row's matcher score of each wording against its plain question (the accepted one)."""
    from engine.crossencoders import load_question_match

    model = load_question_match(matcher)
    for r in fed:
        texts = {"situation": r["asked"]["situation"], "terse": r["asked"]["terse"], "near": r["near_miss"]}
        r["match"] = {k: model.score(text, [r["asked"]["plain"]])[0] for k, text in texts.items()}


def replay(dump: Path, floors: list[float], vouches: list[float], matcher: str | None = None) -> None:
    """Replay memory floors on a run made with a low `--memory-floor` and `--vouch-floor` above 1 (every
    offered sentence rated by the models): a wording is served from memory at (floor, vouch) when its cosine
    reaches the floor and the models accepted it in the run, or its cosine reaches vouch (a vouched sentence
    passes the relevance floors); cited by retrieval alone counts as before. Floors below the run's, and
    the top `candidates` cut, are not replayed. With `matcher` (a question matcher's folder) the floors are
    on its score instead, for the wordings whose cosine reached the run's floor (`match_similarity`)."""
    lines = dump.read_text(encoding="utf-8").splitlines()
    run = json.loads(lines[0])
    fed = [r for r in map(json.loads, lines[1:]) if "similarity" in r]
    if matcher is not None:
        _matched(matcher, fed)
    scale = "match" if matcher is not None else "similarity"
    print(f"replaying {len(fed)} rows of a run at floor {run['floor']}, vouch {run['vouch']}, on {scale}")
    print("floor  vouch  situation hit  terse hit  near miss wrong from memory")
    for floor in floors:
        for vouch in vouches:
            figures = []
            for key in ("situation", "terse", "near"):
                served = 0
                for r in fed:
                    sim, asked = r[scale][key], r[key]
                    memory = (
                        r["similarity"][key] >= run["floor"]
                        and sim >= floor
                        and (asked["team"] or sim >= vouch)
                    )
                    served += memory if key == "near" else memory or (asked["hit"] and not asked["team"])
                figures.append(f"{served / len(fed):.3f} ({served})")
            print(f"{floor:5.2f}  {vouch:5.2f}  " + "  ".join(figures))


def _from_another(record: dict[str, Any], style: str) -> bool:
    """Whether the answer to the row's `style` wording holds a clause the memory added (`chosen_by` team)
    from another row's accepted answer: each row accepts its own mined answer only, so such a clause answers
    another question (a near-duplicate row's answer may also answer this one; the figure is an upper bound of
    the wrong ones). Records dumped before `team_from` count every remembered clause of another answer when
    a team clause is present and none cites the row's sentence."""
    asked, own = record[style], record["plain"]["id"]
    if "team_from" in asked:
        return any(answer != own for answer in asked["team_from"])
    return bool(asked["any_team"] and not asked["team"] and any(a != own for a in asked["from_answers"]))


def _partial(fed: list[dict[str, Any]]) -> dict[str, int]:
    keys = [(s, k) for s in ("situation", "terse", "near") for k in ("hit", "team")]
    return {"fed": len(fed)} | {f"{s} {k}": sum(r[s][k] for r in fed) for s, k in keys}


def _run(
    args: argparse.Namespace, work: Path, rows: list[Written]
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    config = load_config()
    names_in_role = [n.replace("/", "__") for n in ROLES[args.role]]
    repos = [Repository(n, work / "pages" / n) for n in names_in_role]
    label, name, runtime = embedder_spec(args.embedder)
    database = open_database(None, work / f"db-{label}")
    options = IndexOptions(config.indexing.max_file_bytes, config.indexing.code_blocks)
    names = replace(model_names(config), embedder=name, embedder_runtime=runtime)
    settings = EngineConfig()
    if args.memory_floor is not None:
        settings = replace(settings, memory=replace(settings.memory, min_similarity=args.memory_floor))
    if args.vouch_floor is not None:
        settings = replace(settings, memory=replace(settings.memory, vouch_similarity=args.vouch_floor))
    if args.match_floor is not None:
        settings = replace(settings, memory=replace(settings.memory, min_match=args.match_floor))
    if args.match_vouch is not None:
        settings = replace(settings, memory=replace(settings.memory, vouch_match=args.match_vouch))
    if args.match_cosine is not None:
        settings = replace(settings, memory=replace(settings.memory, match_similarity=args.match_cosine))
    if args.match_lead is not None:
        settings = replace(settings, memory=replace(settings.memory, min_lead=args.match_lead))
    if args.answer_weight is not None:
        settings = replace(settings, memory=replace(settings.memory, answer_weight=args.answer_weight))
    if args.matcher is not None:
        names = replace(names, question_match=args.matcher)
    figures: dict[str, Any] = {
        "floor": settings.memory.min_similarity,
        "vouch": settings.memory.vouch_similarity,
        "embedder": label,
        "matcher": args.matcher,
    }
    if args.matcher is not None:
        figures |= {"match floor": settings.memory.min_match, "match vouch": settings.memory.vouch_match}
    figures["lead"] = settings.memory.min_lead
    records: list[dict[str, Any]] = []
    with database.connect() as conn:
        model = load_embedding_model(name, runtime)
        worker = EmbeddingWorker(conn, model)

        def sync() -> None:
            _sync(conn, repos, options, worker)

        begun = time.perf_counter()
        sync()
        _clear(conn)
        engine = build_engine(database, names, config.retrieval, settings)
        try:
            engine.answer("warm-up: what is this about", "mid", Filters())
            for w in rows:
                sid = positive_id(conn, w.row)
                r = {"name": w.row.name, "path": w.row.path, "question": w.row.question, "sid": sid}
                r |= {"asked": w.asked, "near_miss": w.near_miss, "positive_text": w.row.positive}
                r["plain"] = ask(engine, w.asked["plain"], (w.row.name,), sid)
                records.append(r)
            print(f"{time.perf_counter() - begun:.0f}s: plain asked: {len(records)}", flush=True)
            fed = [r for r in records if r["sid"] is not None and r["plain"]["id"] is not None]
            for r in fed:
                give_feedback(conn, r["plain"]["id"], True, [r["sid"]])
            figures["rows"], figures["fed"] = len(records), len(fed)
            figures["no positive sentence"] = sum(r["sid"] is None for r in records)
            figures["plain hit before feedback"] = mean([float(r["plain"]["hit"]) for r in fed])
            for r in fed:
                for style in ("situation", "terse"):
                    r[style] = ask(engine, r["asked"][style], (r["name"],), r["sid"])
                r["near"] = ask(engine, r["near_miss"], (r["name"],), r["sid"])
            _similarities(model, fed)
            print(f"{time.perf_counter() - begun:.0f}s: situation, terse and near misses asked", flush=True)
            print(json.dumps(_partial(fed)), flush=True)
            sample = random.Random(11).sample(fed, min(args.sample, len(fed)))
            served = 0
            for r in sample:
                others = tuple(n for n in names_in_role if n != r["name"])
                r["scoped"] = ask(engine, r["asked"]["situation"], others, r["sid"])
                served += r["scoped"]["hit"] or r["plain"]["id"] in r["scoped"]["from_answers"]
            figures["scoped"] = {"asked": len(sample), "served the accepted sentence": served}
            figures["stale"] = _stale(conn, engine, sync, work, sample)
            print(f"{time.perf_counter() - begun:.0f}s: scoped and stale: {figures}", flush=True)
            timed = fed[: args.p95_rows]
            _clear(conn)
            if args.synthetic:
                synthetic_pairs(conn, args.synthetic, model.name, model.dimension)
            stored = _Stored(conn)
            lookup = AcceptedAnswers(engine.retriever.pool.connection, model)  # as build_engine makes it
            for n, r in enumerate(timed):  # each question both ways, in turn first: no drift between the two
                for key in ("empty", "synthetic") if n % 2 == 0 else ("synthetic", "empty"):
                    stored.put(key == "synthetic")
                    conn.execute("DELETE FROM answers")  # computed each time, never served from the store
                    r[f"plain_{key}"] = ask(engine, r["asked"]["plain"], (r["name"],), r["sid"])
                    r[f"lookup_{key}"] = _lookup_ms(lookup, model, r["asked"]["plain"], r["name"])
            figures["without feedback: same cited as before"] = sum(
                r["plain_empty"]["cited"] == r["plain"]["cited"] for r in timed
            )
            figures["timed rows"] = len(timed)
        finally:
            _clear(conn)
            engine.close()
    return records, figures


def report(records: list[dict[str, Any]], figures: dict[str, Any], synthetic: int) -> None:
    """Print the figures, each with its counts."""
    fed = [r for r in records if "situation" in r]
    lines = [
        ("memory floor (cosine)", f"{figures['floor']:.2f}"),
        (
            "rows asked / fed back",
            f"{figures['rows']} / {figures['fed']} ({figures['no positive sentence']}"
            " without an indexed positive)",
        ),
        ("plain: cites the positive, before feedback", f"{figures['plain hit before feedback']:.3f}"),
    ]
    for style in ("situation", "terse"):
        hit = sum(r[style]["hit"] for r in fed)
        team = sum(r[style]["team"] for r in fed)
        lines.append((f"{style}: remembered hit", f"{hit / max(1, len(fed)):.3f} ({hit}/{len(fed)})"))
        lines.append((f"{style}:   of which from memory", f"{team}"))
        abstained = sum(r[style]["status"] != "answer" for r in fed)
        lines.append((f"{style}: abstained", f"{abstained}/{len(fed)}"))
    for style in ("situation", "terse", "near"):
        other = sum(_from_another(r, style) for r in fed)
        lines.append(
            (f"{style}: another question's sentence from memory", f"{other / max(1, len(fed)):.3f} ({other})")
        )
    wrong = sum(r["near"]["team"] for r in fed)
    cites = sum(r["near"]["hit"] for r in fed)
    lines.append(("near miss: wrong from memory", f"{wrong / max(1, len(fed)):.3f} ({wrong}/{len(fed)})"))
    lines.append(("near miss: cites the accepted sentence at all", f"{cites}/{len(fed)}"))
    scoped, stale = figures["scoped"], figures["stale"]
    lines.append(
        ("scoped to other repos: served", f"{scoped['served the accepted sentence']}/{scoped['asked']}")
    )
    lines.append(
        (
            "stale: served from memory",
            f"{stale['served from memory']}/{stale['edited']} (of {stale['sampled']} sampled)",
        )
    )
    lines.append(("stale: listed by find_gaps", f"{stale['listed stale in gaps']}/{stale['edited']}"))
    timed = [r for r in records if "plain_empty" in r]
    same = figures["without feedback: same cited as before"]
    lines.append(("without feedback: same citations as before", f"{same}/{len(timed)}"))
    for key, label in (("empty", "no accepted answers"), ("synthetic", f"{synthetic:,} accepted answers")):
        ms = [r[f"plain_{key}"]["ms"] for r in timed]
        lines.append(
            (
                f"answer ms p50 / p95, {label}",
                f"{percentile(ms, 0.5):.0f} / {percentile(ms, 0.95):.0f} ({len(ms)})",
            )
        )
        looked = [r[f"lookup_{key}"] for r in timed if f"lookup_{key}" in r]
        if looked:
            lines.append(
                (
                    f"memory lookup ms p50 / p95, {label}",
                    f"{percentile(looked, 0.5):.1f} / {percentile(looked, 0.95):.1f}",
                )
            )
    paired = [r["plain_synthetic"]["ms"] - r["plain_empty"]["ms"] for r in timed]
    if paired:
        spread = " / ".join(f"{percentile(paired, q):.0f}" for q in (0.1, 0.5, 0.9))
        lines.append(("answer ms with minus without, p10 / p50 / p90", spread))
    width = max(len(n) for n, _ in lines)
    for name, value in lines:
        print(f"{name:<{width}}  {value}")


def similarities(rows: list[Written], spec: str = "default=") -> None:
    """Print the cosine of each row's plain question to its other wordings and to its near miss (`spec`'s
    embedder): where a memory floor separates the same question from a near miss."""
    _, name, runtime = embedder_spec(spec)
    model = load_embedding_model(name, runtime)
    others = {
        k: [w.near_miss if k == "near_miss" else w.asked[k] for w in rows]
        for k in ("situation", "terse", "near_miss")
    }
    for other, cos in plain_cosines(model, [w.asked["plain"] for w in rows], others).items():
        quantiles = " ".join(f"p{int(q * 100)} {percentile(cos, q):.3f}" for q in (0.1, 0.25, 0.5, 0.75, 0.9))
        floors = " ".join(
            f">={f}: {sum(c >= f for c in cos)}" for f in (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85)
        )
        print(f"plain to {other} ({len(cos)}): {quantiles}; {floors}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data", type=Path)
    ap.add_argument("--role", choices=sorted(ROLES), default="tune")
    ap.add_argument("--limit", type=int, help="the first N usable rows only (a smoke run)")
    ap.add_argument("--workdir", type=Path)
    ap.add_argument("--memory-floor", type=float, help="MemoryConfig.min_similarity (default: the engine's)")
    ap.add_argument("--vouch-floor", type=float, help="MemoryConfig.vouch_similarity (default: the engine's)")
    ap.add_argument("--sample", type=int, default=30, help="rows asked scoped and made stale")
    ap.add_argument("--p95-rows", type=int, default=60, help="rows timed without and with --synthetic")
    ap.add_argument("--synthetic", type=int, default=10_000, help="accepted answers stored for the timing")
    ap.add_argument("--dump", type=Path)
    ap.add_argument("--similarities", action="store_true", help="only the questions' cosines; no index")
    ap.add_argument("--replay", type=Path, help="a --dump of a low-floor run: replay --floors x --vouches")
    ap.add_argument("--floors", default="0.45,0.5,0.55,0.6,0.65,0.7,0.8")
    ap.add_argument("--vouches", default="0.7,0.75,0.8,0.85,1.01")
    ap.add_argument("--embedder", default="default=", help="LABEL=SPEC[@RUNTIME] (the index's and memory's)")
    ap.add_argument("--matcher", help="a question matcher's folder ([models] question_match)")
    ap.add_argument("--match-floor", type=float, help="MemoryConfig.min_match (default: the engine's)")
    ap.add_argument("--match-vouch", type=float, help="MemoryConfig.vouch_match (default: the engine's)")
    ap.add_argument(
        "--match-cosine", type=float, help="MemoryConfig.match_similarity (default: the engine's)"
    )
    ap.add_argument("--match-lead", type=float, help="MemoryConfig.min_lead (default: the engine's)")
    ap.add_argument(
        "--answer-weight", type=float, help="MemoryConfig.answer_weight (default: the engine's; 0: off)"
    )
    args = ap.parse_args()
    if args.replay is not None:
        numbers = [[float(x) for x in text.split(",") if x] for text in (args.floors, args.vouches)]
        replay(args.replay, *numbers, args.matcher)
        return
    rows = written_rows(args.data, args.role, args.limit)
    print(f"{len(rows)} usable written rows of {args.role}", flush=True)
    if args.similarities:
        similarities(rows, args.embedder)
        return
    with workspace(args.workdir) as work:
        for name in ROLES[args.role]:
            write_pages(args.data, name, work / "pages" / name.replace("/", "__"))
        records, figures = _run(args, work, rows)
    report(records, figures, args.synthetic)
    if args.dump is not None:
        with args.dump.open("w", encoding="utf-8") as out:
            out.write(json.dumps(figures) + "\n")
            out.writelines(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in records)


if __name__ == "__main__":
    main()
