"""One runner for the docs_faq question sets asked through the whole engine: `blind_questions`,
`real_questions` and `page_questions` (`docs_asked.py` is its command line).

A question set row names its repository and the 1-3 sentences that answer it, quoted from the page's Markdown
source. The runner writes the role's pages out, indexes and embeds them once into a kept or temporary workdir
(`docs_faq._sync`: a second run catches up with nothing), asks every question through
`daemon.assembly.build_engine` scoped to its repository, and records per question:
- where search ranked an answering sentence (top 10, top 50);
- the answer's status, whether a cited source answers (`hit`), and answered wrong (answered, citing no
  answering sentence);
- for a refused answerable question, whether an answering sentence is among the first 5 closest passages;
- the stage where an answerable question that was not hit was lost (`loss`, below);
- for a page question's near miss, whether the answer cited the row's own answer sentence (which does not
  answer the near miss: a confidently wrong answer);
- the answer's milliseconds.

A unit answers when it is on the answer's page and its text is the quoted sentence with the Markdown
stripped (`answers_unit`): the same normalised text, one holding the other, or nearly the same words.

Imported by its bare name (the benchmarks run as scripts).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from benchkit import words
from docs_faq import _sync
from docs_faq_pages import ROLES, page_file, write_pages

from daemon.assembly import build_engine, model_names
from daemon.config import load_config
from engine.search import Filters
from indexer.database import open_database
from indexer.embedder import load_embedding_model
from indexer.embedding_queue import EmbeddingWorker
from indexer.reconcile import IndexOptions, Repository
from training.data import norm_key, read_jsonl
from training.docs_text import same_key

__all__ = [
    "LOSSES",
    "PAGE_STYLES",
    "Asked",
    "answers_unit",
    "blind_rows",
    "labels_found",
    "loss_of",
    "page_rows",
    "real_rows",
    "run_role",
]

PAGE_STYLES = ("plain", "situation", "terse")
LOSSES = (
    "search missed",
    "never drawn",
    "another sentence cited",
    "held, not proposed",
    "relevance floor",
    "answer check",
    "verification",
)
"""Where an answerable question that was not hit was lost, in pipeline order (`loss_of`)."""


@dataclass(frozen=True, slots=True)
class Asked:
    """One question as asked: its set and wording style, and the sentences that answer it (`answers`) or,
    for a near miss, the sentence that does NOT answer it and must not be cited (`wrong`)."""

    repo: str
    question: str
    set: str
    style: str
    answerable: bool
    answers: tuple[tuple[str, str], ...] = ()
    wrong: tuple[tuple[str, str], ...] = ()

    @property
    def name(self) -> str:
        """The repository's name in the index."""
        return self.repo.replace("/", "__")


def blind_rows(data: Path, role: str) -> list[Asked]:
    """`blind_questions` of the role's repositories; rows answered only in code count in neither tally."""
    out = []
    for r in read_jsonl(data / "blind_questions.jsonl.gz"):
        if r["repo"] not in ROLES[role] or "answer only in code" in str(r.get("note") or ""):
            continue
        answers = tuple((a["path"], a["sentence"]) for a in r.get("answers") or ())
        out.append(Asked(r["repo"], r["question"], "blind", "blind", bool(r["answerable"]), answers))
    return out


def real_rows(data: Path, role: str) -> list[Asked]:
    """`real_questions` (held-out repositories only: no tune rows exist)."""
    out = []
    for r in read_jsonl(data / "real_questions.jsonl.gz"):
        if r["repo"] not in ROLES[role]:
            continue
        answers = tuple((a["path"], a["sentence"]) for a in r.get("answers") or ())
        out.append(Asked(r["repo"], r["question"], "real", "real", bool(r["answerable"]), answers))
    return out


def page_rows(data: Path, role: str, styles: tuple[str, ...] = PAGE_STYLES, every: int = 1) -> list[Asked]:
    """`page_questions` of the role (every `every`th row): each style answered by the row's sentence, and
    its near miss."""
    out = []
    rows = [r for r in read_jsonl(data / "page_questions.jsonl.gz") if r["repo"] in ROLES[role]]
    for r in rows[::every]:
        gold = ((r["path"], r["answer"]),)
        out += [Asked(r["repo"], r[s], "page", s, True, gold) for s in styles if r.get(s)]
        if r.get("near_miss"):
            out.append(Asked(r["repo"], r["near_miss"], "page", "near_miss", False, (), gold))
    return out


_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)|!?\[([^\]]*)\]\[[^\]]*\]")
_TAG = re.compile(r"<[^>]{1,200}>")


def text_key(text: str) -> str:
    """A sentence as the index reads it, normalised: links read as their text, tags dropped, then
    `norm_key` (case, punctuation and Markdown marks ignored)."""
    return norm_key(_TAG.sub(" ", _LINK.sub(lambda m: m.group(1) or m.group(2) or "", text)))


def _same_path(unit_path: str, path: str) -> bool:
    return unit_path in (path, page_file(Path(), path).as_posix())


def answers_unit(path: str, text: str, answers: tuple[tuple[str, str], ...]) -> bool:
    """Whether a unit at `path` reading `text` is one of `answers`: on the same page, and the same text,
    one holding the other (the unit at least 20 characters), or at least 85% of the quoted sentence's words
    in a unit not twice its length."""
    unit = text_key(text)
    if not unit:
        return False
    for gold_path, sentence in answers:
        if not _same_path(path, gold_path):
            continue
        gold = text_key(sentence)
        if not gold:
            continue
        if same_key(unit, gold) or (len(unit) >= 20 and unit in gold) or (len(gold) >= 20 and gold in unit):
            return True
        a, b = words(gold), words(unit)
        if a and len(a & b) >= 0.85 * len(a) and len(b) <= 2 * len(a):
            return True
    return False


def loss_of(record: dict[str, Any]) -> str | None:
    """Where an answerable question that was not hit was lost (one of `LOSSES`); None when hit or not
    answerable. An answering sentence refused at a stage names it: the relevance model's floor, the answer
    check's floor, or another stage of verification."""
    if not record["answerable"] or record["hit"]:
        return None
    if record["rank10"] is None:
        return "search missed"
    if record["answered"]:
        return "another sentence cited"
    refused = record["gold_refusal"]
    if refused is None:
        return "held, not proposed" if record["gold_held"] else "never drawn"
    stage, measure = refused
    if stage == "relevance":
        return "answer check" if measure == "answer_check" else "relevance floor"
    return "verification"


def _record(asked: Asked, label: str, body: dict[str, Any], top: list[Any], ms: float) -> dict[str, Any]:
    answers = asked.answers
    gold = [(i, h.sentence_id) for i, h in enumerate(top, 1) if answers_unit(h.path, h.text, answers)]
    ranks = [i for i, _ in gold]
    gold_ids = {sentence_id for _, sentence_id in gold}
    cited = [s for c in body["clauses"] for s in c["sources"]]
    nearest = body.get("nearest", [])
    near = [i for i, n in enumerate(nearest, 1) if answers_unit(n["path"], n["text"], answers)]
    refusal = next(
        ((n.get("stage"), n.get("measure")) for n in nearest if answers_unit(n["path"], n["text"], answers)),
        None,
    )
    if refusal is not None and refusal[0] is None:
        refusal = None
    held = {i for t in body["trace"] for i in t.get("new_evidence", [])}
    answered = body["status"] == "answer"
    hit = any(answers_unit(s["path"], s["text"], answers) for s in cited)
    record = {
        "model": label,
        "set": asked.set,
        "style": asked.style,
        "repo": asked.repo,
        "question": asked.question,
        "answerable": asked.answerable,
        "status": body["status"],
        "answered": answered,
        "hit": hit,
        "wrong": answered and not hit and asked.answerable,
        "near_miss_wrong": any(answers_unit(s["path"], s["text"], asked.wrong) for s in cited),
        "rank10": next((r for r in ranks if r <= 10), None),
        "rank50": ranks[0] if ranks else None,
        "nearest5": bool(near) and near[0] <= 5,
        "gold_held": bool(gold_ids & held),
        "gold_refusal": refusal,
        "ms": ms,
        "clause_hits": [
            any(answers_unit(s["path"], s["text"], answers) for s in c["sources"]) for c in body["clauses"]
        ],
        "clause_scores": [
            (c["verification"].get("relevance"), c["verification"].get("answer_check"))
            for c in body["clauses"]
        ],
        "clauses": [
            (c["clause"][:200], [f"{s['path']}:{s['line_start']}" for s in c["sources"]])
            for c in body["clauses"]
        ],
    }
    record["loss"] = loss_of(record)
    return record


def labels_found(conn: Any, asked: list[Asked]) -> list[bool]:
    """For each answerable question, whether some indexed unit of its answers' pages matches an answer (a
    label the matcher cannot find would count as a miss however well the engine did)."""
    out = []
    for a in asked:
        if not a.answerable:
            continue
        paths = sorted({p for path, _ in a.answers for p in (path, page_file(Path(), path).as_posix())})
        units = conn.execute(
            "SELECT d.path, s.text FROM sentences s JOIN documents d ON d.id = s.document_id"
            " JOIN repositories r ON r.id = d.repository_id WHERE r.name = %s AND d.path = ANY(%s)",
            (a.name, paths),
        ).fetchall()
        out.append(any(answers_unit(path, text, a.answers) for path, text in units))
    return out


def ask_all(engine: Any, asked: list[Asked], label: str, budget: str = "mid") -> list[dict[str, Any]]:
    """Each question through `engine`, scoped to its repository: its record (`_record`)."""
    out = []
    for a in asked:
        filters = Filters(repositories=(a.name,))
        top = engine.retriever.search(a.question, 50, filters=filters)
        started = time.perf_counter()
        body = engine.answer(a.question, budget, filters).to_dict()
        out.append(_record(a, label, body, top, 1000 * (time.perf_counter() - started)))
    return out


def run_role(
    data: Path, work: Path, role: str, asked: list[Asked], models: list[Any], budget: str = "mid"
) -> list[dict[str, Any]]:
    """Index and embed the role's pages (once per workdir), then ask `asked` with each model spec
    (`docs_written.ModelSpec`: relevance model, answer check, floors, engine settings)."""
    config = load_config()
    names = sorted({a.repo for a in asked})
    for name in names:
        write_pages(data, name, work / "pages" / name.replace("/", "__"))
    repos = [Repository(n.replace("/", "__"), work / "pages" / n.replace("/", "__")) for n in names]
    database = open_database(None, work / "db")
    options = IndexOptions(config.indexing.max_file_bytes, config.indexing.code_blocks)
    base = model_names(config)
    records: list[dict[str, Any]] = []
    with database.connect() as conn:
        worker = EmbeddingWorker(conn, load_embedding_model(base.embedder, base.embedder_runtime))
        print(f"{role}: indexed and embedded in {_sync(conn, repos, options, worker):.1f}s", flush=True)
        found = labels_found(conn, asked)
        print(f"answer labels found in the index: {sum(found)} of {len(found)} answerable", flush=True)
        for m in models:
            engine = build_engine(
                database,
                replace(base, reranker=m.relevance, answer_check=m.check),
                config.retrieval,
                m.settings(),
            )
            try:
                conn.execute("DELETE FROM answers")
                engine.answer("warm-up: what is this about", budget, Filters())
                records += ask_all(engine, asked, m.label, budget)
                print(f"  {m.label}: {len(asked)} asked", flush=True)
            finally:
                engine.close()
    return records
