"""HotpotQA distractor dev: one-step retrieval versus the IRCoT loop, citation precision, abstention, latency.

    python bench/hotpotqa.py ../shared/data/hotpotqa_dev150.json [--offset N] [--limit N] [--budget B]
        [--workdir DIR] [--dump FILE] [--context always|dependent|never] [--llm-url URL --llm-model M]

Every paragraph of every question is one Markdown file (title as `# heading`, sentences as the body) in one
corpus, indexed and embedded with the default model; the engine then answers each question over the whole
corpus with the extractive planner (or, with `--llm-url`, the LLM planner on that endpoint, the extractive
planner planning the rounds it fails). Gold supporting facts are matched to indexed sentences by text
(citeline's splitter may cut differently from the data set): a sentence is gold when most of its words are
in a gold sentence of the same paragraph, or the reverse. Figures:

- supporting-sentence recall@10: one-step = the top 10 hits for the question; loop = the sentences the engine
  cited, then the evidence its rounds gathered in order, first 10;
- both-gold-paragraphs rate within those same 10;
- citation precision (cited sentences that are gold), abstention rate, mean rounds, latency p50/p95 per route;
- recall and precision again for comparison and for bridge questions, as the engine's router classes them.

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

from benchkit import optional_models, percentile, words, workspace

from engine.answers import Budget, Status
from engine.controller import AnswerEngine, EngineConfig
from engine.crossencoders import CrossEncoderPrecision, load_relevance
from engine.llm_planner import LLMConfig, LLMPlanner
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


def _write_corpus(questions: list[dict[str, Any]], root: Path) -> dict[str, str]:
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


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data", type=Path)
    parser.add_argument("--offset", type=int, default=0, help="skip the first N questions")
    parser.add_argument("--llm-url", help="plan with an LLM on this OpenAI-compatible API base")
    parser.add_argument("--llm-model", default="gemma3-270m", help="with --llm-url: the model name")
    parser.add_argument("--llm-budget", type=float, default=10.0, help="with --llm-url: seconds per answer")
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
    args = parser.parse_args()
    questions = json.loads(args.data.read_text())[args.offset :]
    questions = questions[: args.limit] if args.limit is not None else questions
    with workspace(args.workdir) as tmp:
        corpus = tmp / "corpus"
        corpus.mkdir(parents=True, exist_ok=True)
        titles = _write_corpus(questions, corpus)
        database = open_database(None, tmp / "db")
        embedder = load_embedding_model()
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
        entailment, relevance = (
            (None, None) if args.no_models else optional_models(CrossEncoderPrecision(args.precision))
        )
        if args.relevance_model and not args.no_models:
            relevance = load_relevance(args.relevance_model, precision=CrossEncoderPrecision(args.precision))
        relevance = None if args.no_rerank else relevance
        retriever = Retriever(database, embedder, relevance)
        planner = None
        if args.llm_url:
            llm = LLMConfig(args.llm_url, args.llm_model, budget_seconds=args.llm_budget)
            planner = LLMPlanner(llm)
        engine_planner = planner.name if planner is not None else "extractive"
        engine = AnswerEngine(
            database,
            retriever,
            embedder,
            entailment=entailment,
            relevance=relevance,
            config=EngineConfig(store=False),
            pool=retriever.pool,  # as `daemon.assembly.build_engine` builds it: the rounds share the pool
            planner=planner,
        )
        engine.answer(questions[0]["question"], use_store=False)  # warm the models up
        totals: dict[str, list[float]] = defaultdict(list)
        dumped = args.dump.open("w") if args.dump is not None else None
        latency: dict[str, list[float]] = defaultdict(list)
        kinds: dict[str, int] = defaultdict(int)
        for question in questions:
            gold: dict[str, list[str]] = defaultdict(list)
            context = dict(question["context"])
            for title, index in question["supporting_facts"]:
                if index < len(context.get(title, [])):
                    gold[title].append(context[title][index])
            n_gold = sum(len(v) for v in gold.values())
            kind = "comparison" if shape(question["question"]).comparison else "bridge"
            kinds[kind] += 1

            def tally(key: str, value: float, kind: str = kind) -> None:
                totals[key].append(value)
                totals[f"{kind}:{key}"].append(value)

            def scored(ids: list[int], gold: dict[str, list[str]] = gold) -> tuple[int, set[str]]:
                found, paragraphs = set(), set()
                for sid in ids:
                    text, path = texts[sid]
                    title = titles[path]
                    if title in gold and _is_gold(text, gold[title]):
                        found |= {g for g in gold[title] if _is_gold(text, [g])}
                        paragraphs.add(title)
                return len(found), paragraphs

            one_step = [h.sentence_id for h in retriever.search(question["question"], 10)]
            got, paragraphs = scored(one_step)
            tally("one_recall", got / n_gold)
            totals["one_both"].append(float(len(paragraphs) == len(gold)))
            started = time.perf_counter()
            result = engine.answer(question["question"], Budget(args.budget), use_store=False)
            latency[result.route.value].append(1000 * (time.perf_counter() - started))
            cited = [s.sentence_id for c in result.clauses for s in c.sources]
            gathered = [i for t in result.trace for i in t.new_evidence]
            loop = list(dict.fromkeys(cited + gathered))[:10]
            got, paragraphs = scored(loop)
            tally("loop_recall", got / n_gold)
            totals["loop_both"].append(float(len(paragraphs) == len(gold)))
            totals["abstain"].append(float(result.status is not Status.ANSWER))
            totals["rounds"].append(float(len(result.trace)))
            totals["fallback_rounds"].append(float(sum(1 for t in result.trace if t.planned_by)))
            totals["conflicts"].append(float(any(c.conflicts_with for c in result.clauses)))
            marks = []
            for sid in dict.fromkeys(cited):
                text, path = texts[sid]
                marks.append((titles[path], text, _is_gold(text, gold.get(titles[path], []))))
                tally("precision", float(marks[-1][2]))
            if dumped is not None:
                record = {
                    "question": question["question"],
                    "gold": gold,
                    "route": result.route.value,
                    "cited": marks,
                    "clauses": [c.to_dict() for c in result.clauses],
                    "notes": result.notes,
                    "rounds": [t.to_dict() for t in result.trace],
                    "one_step": [[titles[texts[i][1]], texts[i][0]] for i in one_step],
                    "loop": [[titles[texts[i][1]], texts[i][0]] for i in loop],
                    "gathered": [[titles[texts[i][1]], texts[i][0]] for i in dict.fromkeys(gathered)],
                }
                dumped.write(json.dumps(record) + "\n")
        retriever.close()
        if dumped is not None:
            dumped.close()

    def mean(key: str) -> float:
        return sum(totals[key]) / len(totals[key]) if totals[key] else float("nan")

    print(f"budget {args.budget}; planner {engine_planner}")
    if args.llm_url:
        fallback = mean("fallback_rounds")
        print(f"rounds the extractive planner planned for the model: {fallback:.2f} per question")
    print(
        f"supporting-sentence recall@10  one-step {mean('one_recall'):.3f}   loop {mean('loop_recall'):.3f}"
    )
    print(f"both gold paragraphs in top 10 one-step {mean('one_both'):.3f}   loop {mean('loop_both'):.3f}")
    print(f"citation precision {mean('precision'):.3f} over {len(totals['precision'])} cited sentences")
    print(f"abstention rate {mean('abstain'):.3f}; mean rounds {mean('rounds'):.2f}")
    print(f"answers with clauses marked as conflicting {mean('conflicts'):.3f}")
    for kind, count in sorted(kinds.items()):
        print(
            f"{kind + ' questions':<20} n={count:<4} recall@10 one-step {mean(kind + ':one_recall'):.3f}"
            f"   loop {mean(kind + ':loop_recall'):.3f}   citation precision {mean(kind + ':precision'):.3f}"
            f" over {len(totals[kind + ':precision'])}"
        )
    for route, values in sorted(latency.items()):
        print(
            f"route {route:<7} n={len(values):<4} p50 {percentile(values, 0.5):7.1f} ms"
            f"   p95 {percentile(values, 0.95):7.1f} ms"
        )


if __name__ == "__main__":
    main()
