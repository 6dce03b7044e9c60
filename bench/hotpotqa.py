"""HotpotQA distractor dev: one-step retrieval versus the IRCoT loop, citation precision, abstention, latency.

    python bench/hotpotqa.py ../shared/data/hotpotqa_dev150.json [--offset N] [--limit N] [--budget B]
        [--workdir DIR] [--dump FILE] [--context always|dependent|never] [--one-hop-patience N]
        [--answer-check none|PATH] [--min-relevance F] [--min-answer-check F]
        [--llm-url URL [--llm-model M] [--llm-budget S] [--llm-modes M1,M2] [--compare-llm]]

Every paragraph of every question is one Markdown file (title as `# heading`, sentences as the body) in one
corpus, indexed and embedded with the default model; the engine then answers each question over the whole
corpus with the extractive planner (or, with `--llm-url`, the LLM planner on that endpoint, the extractive
planner planning the rounds it fails or whose every clause verification refused). Gold supporting facts are
matched to indexed sentences by text (citeline's splitter may cut differently from the data set): a
sentence is gold when most of its words are in a gold sentence of the same paragraph, or the reverse. Figures:

- supporting-sentence recall@10: one-step = the top 10 hits for the question; loop = the sentences the engine
  cited, then the evidence its rounds gathered in order, first 10;
- both-gold-paragraphs rate within those same 10;
- citation precision (cited sentences that are gold), abstention rate, mean rounds, latency p50/p95 per route;
- recall and precision again for comparison and for bridge questions, as the engine's router classes them;
- with an LLM planner, who planned its rounds (`llm_compare.RoundCounts`).

`--compare-llm` (with `--llm-url`) answers every question on the same index, first with the extractive
planner, then with the model in each of `--llm-modes` (`llm_compare.MODES`; answers are never stored, so
none is served another's); it prints each planner's figures as above, then side by side: answer hit rate
(cites a gold sentence), loop recall, citation precision, abstention, mean rounds, latency p50/p95 over all
questions. `--dump` then writes a line per question and planner (`planner`).

The shipped cross-encoders are used when their weights are present (the reranker in retrieval and
verification, NLI in verification); without them the run says so. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from benchkit import add_engine_arguments, engine_settings, optional_models, percentile, words, workspace
from llm_compare import (
    PlannerTally,
    add_llm_arguments,
    close_planners,
    latency_rows,
    planners_for,
    print_side_by_side,
)

from daemon.assembly import NO_MODEL
from engine.answers import Answer, Budget, Status
from engine.controller import AnswerEngine, EngineConfig
from engine.crossencoders import CrossEncoderPrecision, load_answer_check, load_relevance
from engine.routing import shape
from engine.search import Retriever
from indexer.database import open_database
from indexer.embedder import load_embedding_model
from indexer.embedding_queue import ContextOptions, EmbeddingWorker, PreviousSentence, QueueOptions
from indexer.reconcile import Repository, reconcile_repository


def _is_gold(text: str, gold: list[str]) -> bool:
    mine = words(text)
    for sentence in gold:
        theirs = words(sentence)
        if mine and theirs and len(mine & theirs) / min(len(mine), len(theirs)) >= 0.8:
            return True
    return False


def write_corpus(questions: list[dict[str, Any]], root: Path) -> dict[str, str]:
    """One file per distinct paragraph, rewriting only what differs and removing files of other questions
    (so a kept work directory holds exactly this run's corpus); returns file name -> title."""
    files: dict[str, str] = {}
    seen: dict[tuple[str, str], str] = {}
    for question in questions:
        for title, sentences in question["context"]:
            body = "".join(sentences).strip()
            key = (title, body)
            if key in seen:
                continue
            name = f"p{len(files):05d}.md"
            seen[key] = name
            files[name] = title
            page, content = root / name, f"# {title}\n\n{body}\n"
            if not page.exists() or page.read_text() != content:
                page.write_text(content)
    for stale in {p.name for p in root.glob("*.md")} - set(files):
        (root / stale).unlink()
    return files


class _Judge:
    """Matches a question's sentences to its gold supporting facts (`_is_gold`), by title and text."""

    def __init__(self, texts: dict[int, tuple[str, str]], titles: dict[str, str]) -> None:
        self.texts, self.titles = texts, titles

    def scored(self, ids: list[int], gold: dict[str, list[str]]) -> tuple[int, set[str]]:
        """How many gold sentences `ids` find, and the gold paragraphs they touch."""
        found, paragraphs = set(), set()
        for sid in ids:
            text, path = self.texts[sid]
            title = self.titles[path]
            if title in gold and _is_gold(text, gold[title]):
                found |= {g for g in gold[title] if _is_gold(text, [g])}
                paragraphs.add(title)
        return len(found), paragraphs

    def named(self, ids: list[int]) -> list[list[str]]:
        """Each sentence as [title, text]."""
        return [[self.titles[self.texts[i][1]], self.texts[i][0]] for i in ids]

    def marks(self, ids: list[int], gold: dict[str, list[str]]) -> list[tuple[str, str, bool]]:
        """Each sentence as (title, text, is gold)."""
        return [(t, text, _is_gold(text, gold.get(t, []))) for t, text in self.named(ids)]


class _Tally(PlannerTally):
    """One planner's figures over a run, from its answers."""

    def add(
        self, result: Answer, ms: float, kind: str, gold: dict[str, list[str]], judge: _Judge
    ) -> dict[str, Any]:
        """Count one answer; returns what `--dump` writes of it."""
        self.latency[result.route.value].append(ms)
        cited = list(dict.fromkeys(s.sentence_id for c in result.clauses for s in c.sources))
        gathered = [i for t in result.trace for i in t.new_evidence]
        loop = list(dict.fromkeys(cited + gathered))[:10]
        got, paragraphs = judge.scored(loop, gold)
        self.put("loop_recall", got / sum(len(v) for v in gold.values()), kind)
        self.put("loop_both", float(len(paragraphs) == len(gold)))
        self.put("abstain", float(result.status is not Status.ANSWER))
        self.put("rounds", float(len(result.trace)))
        self.put("conflicts", float(any(c.conflicts_with for c in result.clauses)))
        marks = judge.marks(cited, gold)
        for mark in marks:
            self.put("precision", float(mark[2]), kind)
        self.put("hit", float(any(mark[2] for mark in marks)))
        rounds = [t.to_dict() for t in result.trace]
        self.rounds.add(rounds)
        return {
            "route": result.route.value,
            "cited": marks,
            "clauses": [c.to_dict() for c in result.clauses],
            "notes": result.notes,
            "rounds": rounds,
            "loop": judge.named(loop),
            "gathered": judge.named(list(dict.fromkeys(gathered))),
        }


def _print_one(name: str, one: _Tally, tally: _Tally, kinds: dict[str, int]) -> None:
    """One planner's figures, as lines."""
    print(f"planner {name}")
    if name != "extractive":
        tally.rounds.print("llm")
    mean = tally.mean
    one_recall, one_both = one.mean("one_recall"), one.mean("one_both")
    print(f"supporting-sentence recall@10  one-step {one_recall:.3f}   loop {mean('loop_recall'):.3f}")
    print(f"both gold paragraphs in top 10 one-step {one_both:.3f}   loop {mean('loop_both'):.3f}")
    print(f"citation precision {mean('precision'):.3f} over {len(tally.totals['precision'])} cited sentences")
    print(f"abstention rate {mean('abstain'):.3f}; mean rounds {mean('rounds'):.2f}")
    print(f"answers with clauses marked as conflicting {mean('conflicts'):.3f}")
    for kind, count in sorted(kinds.items()):
        print(
            f"{kind + ' questions':<20} n={count:<4} recall@10 one-step {one.mean(kind + ':one_recall'):.3f}"
            f"   loop {mean(kind + ':loop_recall'):.3f}   citation precision {mean(kind + ':precision'):.3f}"
            f" over {len(tally.totals[kind + ':precision'])}"
        )
    for route, values in sorted(tally.latency.items()):
        print(
            f"route {route:<7} n={len(values):<4} p50 {percentile(values, 0.5):7.1f} ms"
            f"   p95 {percentile(values, 0.95):7.1f} ms"
        )


def _print_compare(names: list[str], one: _Tally, tallies: list[_Tally], kinds: dict[str, int]) -> None:
    """Each planner's figures as `_print_one` prints them, then the main ones side by side."""
    for name, tally in zip(names, tallies, strict=True):
        print(f"\n== {name}: ", end="")
        _print_one(name, one, tally, kinds)
    rows: list[tuple[str, list[float | str]]] = [
        ("answer hit (cites a gold sentence)", [t.mean("hit") for t in tallies]),
        ("supporting-sentence recall@10 loop", [t.mean("loop_recall") for t in tallies]),
        ("citation precision", [t.mean("precision") for t in tallies]),
        ("cited sentences", [str(len(t.totals["precision"])) for t in tallies]),
        ("abstention rate", [t.mean("abstain") for t in tallies]),
        ("mean rounds", [t.mean("rounds") for t in tallies]),
        *latency_rows("latency", [[v for vs in t.latency.values() for v in vs] for t in tallies]),
    ]
    print("\n== side by side, every question answered by each planner")
    print_side_by_side(names, rows)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data", type=Path)
    parser.add_argument("--offset", type=int, default=0, help="skip the first N questions")
    add_llm_arguments(parser, "plan with an LLM on this OpenAI-compatible API base", compare=True)
    parser.add_argument("--limit", type=int, default=None, help="only N questions")
    parser.add_argument("--budget", choices=[b.value for b in Budget], default="mid")
    parser.add_argument("--no-models", action="store_true", help="without the cross-encoders, for comparison")
    parser.add_argument("--no-rerank", action="store_true", help="no relevance cross-encoder")
    parser.add_argument(
        "--relevance-model", default="", help="a relevance model folder or name, not the shipped one"
    )
    parser.add_argument(
        "--precision",
        choices=[p.value for p in CrossEncoderPrecision],
        default="auto",
        help="what the cross-encoders compute in (auto: bfloat16 where the CPU has it in hardware)",
    )
    parser.add_argument(
        "--dump", type=Path, default=None, help="write each question's citations as JSON lines"
    )
    parser.add_argument(
        "--answer-check",
        default="",
        help=f'the answer check: a folder or name, "{NO_MODEL}" for none (default: the shipped one)',
    )
    add_engine_arguments(parser)
    parser.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="keep the corpus and database here; a second run re-embeds only paragraphs that changed",
    )
    parser.add_argument(
        "--context",
        choices=[p.value for p in PreviousSentence],
        default=ContextOptions().previous.value,
        help="when the previous sentence is embedded with a sentence (with --workdir, a change re-embeds"
        " only the sentences whose embedded text changes)",
    )
    parser.add_argument(
        "--embedder",
        default="",
        help="an embedder spec, as [models] embedder (empty: shipped)",
    )
    args = parser.parse_args()
    planners = planners_for(parser, args)
    questions = json.loads(args.data.read_text())[args.offset :]
    questions = questions[: args.limit] if args.limit is not None else questions
    with workspace(args.workdir) as tmp:
        corpus = tmp / "corpus"
        corpus.mkdir(parents=True, exist_ok=True)
        titles = write_corpus(questions, corpus)
        database = open_database(None, tmp / "db")
        embedder = load_embedding_model(args.embedder)
        with database.connect() as conn:
            started = time.perf_counter()
            report = reconcile_repository(conn, Repository("hotpotqa", corpus))
            print(
                f"{len(questions)} questions, {len(titles)} paragraphs,"
                f" {report.sentences_inserted:,} sentences written"
            )
            context = ContextOptions(previous=PreviousSentence(args.context))
            EmbeddingWorker(conn, embedder, QueueOptions(context=context)).drain()
            print(f"indexed and embedded in {time.perf_counter() - started:.1f}s")
            texts = {
                int(r[0]): (r[1], r[2])
                for r in conn.execute(
                    "SELECT s.id, s.text, d.path FROM sentences s JOIN documents d ON d.id = s.document_id"
                ).fetchall()
            }
        precision = CrossEncoderPrecision(args.precision)
        entailment, relevance = (None, None) if args.no_models else optional_models(precision)
        if args.relevance_model and not args.no_models:
            relevance = load_relevance(args.relevance_model, precision=precision)
        relevance = None if args.no_rerank else relevance
        check = (
            None
            if args.no_models or args.answer_check == NO_MODEL
            else load_answer_check(args.answer_check or None, precision=precision)
        )
        retriever = Retriever(database, embedder, relevance)
        engines = {
            label: AnswerEngine(
                database,
                retriever,
                embedder,
                entailment=entailment,
                relevance=relevance,
                config=engine_settings(args, EngineConfig(store=False)),
                answer_check=check,
                pool=retriever.pool,  # as `daemon.assembly.build_engine` builds it: the rounds share the pool
                planner=planner,
            )
            for label, planner in planners.items()
        }
        for engine in engines.values():
            engine.answer(questions[0]["question"], use_store=False)  # warm the models (and the LLM) up
        judge = _Judge(texts, titles)
        one, tallies = _Tally(), {label: _Tally() for label in engines}
        dumped = args.dump.open("w") if args.dump is not None else None
        kinds: dict[str, int] = defaultdict(int)
        for question in questions:
            gold: dict[str, list[str]] = defaultdict(list)
            sentences = dict(question["context"])
            for title, index in question["supporting_facts"]:
                if index < len(sentences.get(title, [])):
                    gold[title].append(sentences[title][index])
            kind = "comparison" if shape(question["question"]).comparison else "bridge"
            kinds[kind] += 1
            one_step = [h.sentence_id for h in retriever.search(question["question"], 10)]
            got, paragraphs = judge.scored(one_step, gold)
            one.put("one_recall", got / sum(len(v) for v in gold.values()), kind)
            one.put("one_both", float(len(paragraphs) == len(gold)))
            for label, engine in engines.items():
                started = time.perf_counter()
                result = engine.answer(question["question"], Budget(args.budget), use_store=False)
                ms = 1000 * (time.perf_counter() - started)
                record = tallies[label].add(result, ms, kind, gold, judge)
                if dumped is not None:
                    which = {"planner": label} if args.compare_llm else {}
                    head = {"question": question["question"], **which, "gold": gold}
                    dumped.write(json.dumps({**head, **record, "one_step": judge.named(one_step)}) + "\n")
        retriever.close()
        close_planners(planners)
        if dumped is not None:
            dumped.close()
    print(f"budget {args.budget}", end="; ")
    names = [planner.name for planner in planners.values()]
    if args.compare_llm:
        print(f"{names[1]} at {args.llm_url}, {args.llm_budget:g} s per answer; compared with extractive")
        _print_compare(list(planners), one, list(tallies.values()), kinds)
    else:
        _print_one(names[0], one, tallies[next(iter(planners))], kinds)


if __name__ == "__main__":
    main()
