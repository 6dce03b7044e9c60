"""Fusion settings replayed on the written questions: each lane ranked once per question, fused offline.

    python bench/fusion_replay.py DOCS_FAQ --workdir DIR [--role tune|heldout] [--embedder LABEL=SPEC]
        [--weights LEX:VEC:RRF_K,...] [--cutoffs 5,10,20]

DIR is a `bench/docs_written.py` workdir whose database `DIR/db-LABEL` is indexed and embedded (this bench
reads it and changes nothing). Each usable row of the role is asked in its three written styles and by its
mined heading-worded question; the lexical and vector lanes rank each once (`RetrievalConfig`'s candidate
counts), and every `--weights` setting (lexical weight, vector weight, `rrf_k`) fuses those rankings as
`engine.search` does (`fuse`, one identity per document and normalized hash). Per setting and style it
prints search recall at each cutoff: the share of questions whose mined answer is among the fused top N.
No reranker (the default leaves fusion's order). Figures only; choose settings on `--role tune`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from benchkit import mean
from docs_written import STYLES, written_rows

from engine.search import Filters
from engine.search._fusion import Lane, LaneResult, fuse
from engine.search._hits import hydrate
from engine.search._retriever import Retriever
from indexer.database import open_database
from indexer.embedder import load_embedding_model
from training.embedder_eval import embedder_spec

Ranked = list[tuple[int, float]]


def _lanes(retriever: Retriever, question: str, repository: str) -> tuple[Ranked, Ranked]:
    filters = Filters(repositories=(repository,))
    lexical = [(s.hit.sentence_id, s.hit.score) for s in retriever._lexical(question, filters).hits]
    return lexical, retriever._vector(question, filters)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data", type=Path)
    ap.add_argument("--workdir", type=Path, required=True)
    ap.add_argument("--role", default="tune")
    ap.add_argument("--embedder", default="default=", help="LABEL=SPEC[@RUNTIME] (the index's)")
    ap.add_argument("--weights", default="1:1:10,1:1.5:10,1:2:10,1:3:10,1:0:10,0:1:10")
    ap.add_argument("--cutoffs", default="5,10,20")
    args = ap.parse_args()
    label, name, runtime = embedder_spec(args.embedder)
    retriever = Retriever(
        open_database(None, args.workdir / f"db-{label}"), load_embedding_model(name, runtime)
    )
    rows = written_rows(args.data, args.role, None)
    asked = [(s, w, w.asked[s]) for w in rows for s in STYLES] + [
        ("heading", w, w.row.question) for w in rows
    ]
    runs = []
    try:
        for style, row, question in asked:
            lexical, vector = _lanes(retriever, question, row.row.name)
            with retriever.pool.connection() as conn:
                found = hydrate(conn, list(dict.fromkeys([i for i, _ in lexical + vector])))
            identity = {sid: (hit.document_id, norm) for sid, (hit, norm) in found.items()}
            gold = {identity[s] for s, (hit, _) in found.items() if row.row.is_positive(hit.path, hit.text)}
            runs.append((style, lexical, vector, identity, gold))
    finally:
        retriever.close()
    cutoffs = [int(c) for c in args.cutoffs.split(",")]
    styles = [*STYLES, "heading"]
    print(f"{len(rows)} rows of {args.role}; recall@{'/'.join(map(str, cutoffs))} per style")
    print(f"{'lex:vec:rrf_k':<14}" + "".join(f"{s:>22}" for s in styles))
    for setting in args.weights.split(","):
        lex_w, vec_w, k = (float(x) for x in setting.split(":"))
        recalls: dict[str, list[list[bool]]] = {s: [] for s in styles}
        for style, lexical, vector, identity, gold in runs:
            lanes = [LaneResult(Lane.LEXICAL, lexical, lex_w), LaneResult(Lane.VECTOR, vector, vec_w)]
            fused = [
                identity[f.sentence_id]
                for f in fuse(lanes, rrf_k=k, identity=identity)
                if f.sentence_id in identity
            ]
            recalls[style].append([bool(gold & set(fused[:c])) for c in cutoffs])
        cells = [
            " / ".join(f"{mean([float(r[n]) for r in recalls[s]]):.3f}" for n in range(len(cutoffs)))
            for s in styles
        ]
        print(f"{setting:<14}" + "".join(f"{c:>22}" for c in cells))


if __name__ == "__main__":
    main()
