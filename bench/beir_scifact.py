"""Retrieval quality and latency on BEIR SciFact: BM25, dense, fused, fused + rerank.

    python bench/beir_scifact.py ../shared/data/beir_scifact/qrels/train.tsv [--limit N] [--no-rerank]
        [--workdir DIR] [--variants onnx-int8:dependent,torch:dependent,...] [--mix] [--corpus-docs N]

Each variant (embedder runtime : previous-sentence context, `always`, `dependent` or `never`) is embedded
into the same database in turn (a context change re-encodes only the sentences whose embedded text changes)
and scored dense and fused, so runtimes and context policies compare in one run. `--mix` also scores, by
exact search in numpy, each sentence's own vector (the `never` variant's, which must be listed) mixed with
the vector of the sentence before it.

The corpus is written as Markdown (one document per abstract, its title as `# heading`), indexed, embedded
with the default model, then every query of the qrels file is run in each mode. Sentence hits are mapped to
their abstracts (first occurrence wins) for document-level nDCG@10 and Recall@100. Prints figures; asserts
nothing. The reranker reads "title: sentence" and its order is fused with fusion's (`rerank_weight`).
Published figures to compare with are in README.md (Search).
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from pgvector.psycopg import register_vector

from engine.crossencoders import load_relevance
from engine.search import RetrievalConfig, Retriever, SearchMode
from indexer.database import Database, open_database
from indexer.embedder import EmbedderRuntime, EmbeddingModel, load_embedding_model
from indexer.embedding_queue import ContextOptions, EmbeddingWorker, PreviousSentence, QueueOptions
from indexer.reconcile import Repository, reconcile_repository


@dataclass(frozen=True, slots=True)
class Queries:
    """The queries asked, in order, their text, and the abstracts relevant to each."""

    ids: list[str]
    text: dict[str, str]
    relevant: dict[str, set[str]]


def _qrels(path: Path) -> dict[str, set[str]]:
    relevant: dict[str, set[str]] = defaultdict(set)
    for line in path.read_text().splitlines()[1:]:
        qid, doc, score = line.split("\t")
        if int(score) > 0:
            relevant[qid].add(doc)
    return relevant


def _ndcg10(ranked: list[str], relevant: set[str]) -> float:
    dcg = sum(1 / math.log2(i + 2) for i, doc in enumerate(ranked[:10]) if doc in relevant)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(10, len(relevant))))
    return dcg / ideal


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("qrels", type=Path)
    parser.add_argument("--limit", type=int, default=None, help="only the first N queries")
    parser.add_argument("--no-rerank", action="store_true")
    parser.add_argument("--lexical-only", action="store_true", help="BM25 alone: no embedding, no models")
    parser.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="keep the corpus and database here; a second run reuses them (indexing is change-aware, so "
        "nothing is re-embedded) instead of spending ~20 minutes embedding again",
    )
    parser.add_argument(
        "--variants",
        default="onnx-int8:dependent",
        help="comma-separated RUNTIME:PREVIOUS pairs, embedded in turn (runtime onnx-int8, torch or"
        " torch-bf16; previous sentence always, dependent or never)",
    )
    parser.add_argument(
        "--corpus-docs",
        type=int,
        default=None,
        help="a smaller corpus: the chosen queries' relevant abstracts, then others up to N (figures are then"
        " not comparable with the full corpus's)",
    )
    parser.add_argument("--mix", action="store_true", help="also score own + previous vectors (needs :never)")
    parser.add_argument(
        "--embedder",
        default="",
        help="an embedder spec, as [models] embedder (empty: shipped)",
    )
    args = parser.parse_args()
    data = args.qrels.parent.parent
    relevant = _qrels(args.qrels)
    queries = {
        q["_id"]: q["text"]
        for q in map(json.loads, (data / "queries.jsonl").read_text().splitlines())
        if q["_id"] in relevant
    }
    qids = sorted(queries, key=int)[: args.limit]
    asked = Queries(qids, queries, relevant)
    with tempfile.TemporaryDirectory() as scratch:
        tmp = args.workdir or Path(scratch)
        corpus = tmp / "corpus"
        corpus.mkdir(parents=True, exist_ok=True)
        docs = [json.loads(line) for line in (data / "corpus.jsonl").read_text().splitlines()]
        if args.corpus_docs is not None:  # every abstract relevant to a chosen query, then the first others
            wanted = set().union(*(relevant[q] for q in qids))
            docs = sorted(docs, key=lambda d: d["_id"] not in wanted)[: max(args.corpus_docs, len(wanted))]
            for stale in set(corpus.glob("*.md")) - {corpus / f"{d['_id']}.md" for d in docs}:
                stale.unlink()
        for doc in docs:
            page = corpus / f"{doc['_id']}.md"
            content = f"# {doc['title']}\n\n{doc['text']}\n"
            if not page.exists() or page.read_text() != content:
                page.write_text(content)
        database = open_database(None, tmp / "db")
        with database.connect() as conn:
            started = time.perf_counter()
            report = reconcile_repository(conn, Repository("scifact", corpus))
            print(f"indexed {report.sentences_inserted:,} sentences in {time.perf_counter() - started:.1f}s")
        config = RetrievalConfig()
        print(f"{len(qids)} queries; candidates {config.lexical_candidates}/{config.vector_candidates}")
        print(f"{'mode':<34}{'nDCG@10':>9}{'R@100':>8}{'p50 ms':>9}{'p95 ms':>9}")
        lexical = Retriever(database, None, None, config)
        _score("BM25", lexical, SearchMode.LEXICAL, asked)
        lexical.close()
        if args.lexical_only:
            return
        variants = [v.split(":") for v in args.variants.split(",")]
        models: dict[str, EmbeddingModel] = {}
        for index, (runtime, previous) in enumerate(variants):
            model = models.get(runtime) or load_embedding_model(args.embedder, EmbedderRuntime(runtime))
            models[runtime] = model
            options = QueueOptions(context=ContextOptions(previous=PreviousSentence(previous)))
            with database.connect() as conn:
                started = time.perf_counter()
                drained = EmbeddingWorker(conn, model, options).drain()
            print(
                f"[{runtime} : previous {previous}] embedded {drained.embedded:,} sentences"
                f" ({drained.unchanged:,} unchanged) in {time.perf_counter() - started:.1f}s"
            )
            plain = Retriever(database, model, None, config)
            label = f"{runtime}:{previous}"
            _score(f"dense {label}", plain, SearchMode.VECTOR, asked)
            _score(f"fused {label}", plain, SearchMode.HYBRID, asked)
            if index == 0 and not args.no_rerank:
                reranking = Retriever(
                    database, model, load_relevance(), replace(config, rerank_candidates=32)
                )
                _score(f"fused+rerank {label}", reranking, SearchMode.HYBRID, asked)
                reranking.close()
            plain.close()
            if args.mix and previous == "never":
                _mix(database, model, asked)


def _score(
    label: str,
    retriever: Retriever,
    mode: SearchMode,
    asked: Queries,
) -> None:
    ndcg, recall, latency = [], [], []
    for qid in asked.ids:
        started = time.perf_counter()
        hits = retriever.search(asked.text[qid], 1000, mode=mode)
        latency.append(1000 * (time.perf_counter() - started))
        ranked = list(dict.fromkeys(Path(h.path).stem for h in hits))
        relevant = asked.relevant[qid]
        ndcg.append(_ndcg10(ranked, relevant))
        recall.append(len(set(ranked[:100]) & relevant) / len(relevant))
    print(
        f"{label:<34}{sum(ndcg) / len(ndcg):>9.3f}{sum(recall) / len(recall):>8.3f}"
        f"{_pct(latency, 0.5):>9.1f}{_pct(latency, 0.95):>9.1f}",
        flush=True,
    )


def _mix(database: Database, model: EmbeddingModel, asked: Queries) -> None:
    """Dense nDCG@10 by exact search: own vector + w x the previous sentence's own vector, renormalized."""
    with database.connect() as conn:
        register_vector(conn)
        rows = conn.execute(
            "SELECT d.path, s.ordinal, e.embedding FROM sentence_embeddings e"
            " JOIN sentences s ON s.id = e.sentence_id JOIN documents d ON d.id = s.document_id"
            " ORDER BY d.path, s.ordinal"
        ).fetchall()
    docs = [Path(r[0]).stem for r in rows]
    own = np.asarray([r[2].to_numpy() for r in rows], dtype=np.float32)
    previous = np.zeros_like(own)
    for i in range(1, len(rows)):
        if rows[i][0] == rows[i - 1][0] and rows[i][1] == rows[i - 1][1] + 1:
            previous[i] = own[i - 1]
    query_vectors = model.encode([asked.text[q] for q in asked.ids])
    for weight in (0.0, 0.25, 0.5):
        mixed = own + weight * previous
        mixed /= np.linalg.norm(mixed, axis=1, keepdims=True)
        scores = query_vectors @ mixed.T
        ndcg = []
        for n, qid in enumerate(asked.ids):
            order = np.argsort(-scores[n])[:1000]
            ranked = list(dict.fromkeys(docs[i] for i in order))
            ndcg.append(_ndcg10(ranked, asked.relevant[qid]))
        print(f"{f'dense exact own + {weight} x previous':<34}{sum(ndcg) / len(ndcg):>9.3f}", flush=True)


if __name__ == "__main__":
    main()
