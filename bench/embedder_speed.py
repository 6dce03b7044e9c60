"""Two embedders' encoding speed on the same sentences, alternated in one run: does a new model cost more?

    python bench/embedder_speed.py GUIDE_DIR [--embedder LABEL=SPEC[@RUNTIME] ...] [--sentences N]
        [--rounds R]

The first N citable units of GUIDE_DIR's Markdown files (sorted by path), read as the embedding queue reads
them (heading path, dependent previous sentence), are encoded by each embedder in turn, R rounds, the order
swapped each round so neither always runs first. Prints each embedder's best and median sentences/s and the
ratio to the first one. The default pair: the default all-MiniLM-L6-v2 and citeline-docs, both on int8
ONNX (what `auto` runs on a CPU without native bfloat16).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `training` is not an installed package

from indexer.embedder import load_embedding_model
from indexer.embedding_context import ContextOptions, contextual_text
from indexer.markdown import UnitKind
from indexer.segment import markdown_units
from training.embedder_eval import embedder_spec


def sentences(guide: Path, limit: int) -> list[str]:
    out: list[str] = []
    for file in sorted(guide.rglob("*.md")):
        units = markdown_units(file.read_text(encoding="utf-8", errors="replace"))
        for i, unit in enumerate(units):
            if unit.kind is UnitKind.HEADING:
                continue
            previous = units[i - 1].text if i else None
            out.append(contextual_text(unit.text, unit.heading_path, None, previous, ContextOptions()))
            if len(out) >= limit:
                return out
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("guide", type=Path)
    ap.add_argument("--embedder", action="append", default=[], help="LABEL=SPEC[@RUNTIME]")
    ap.add_argument("--sentences", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=4)
    args = ap.parse_args()
    specs = args.embedder or ["default=@onnx-int8", "docs=citeline-docs@onnx-int8"]
    texts = sentences(args.guide, args.sentences)
    models = []
    for spec in specs:
        label, name, runtime = embedder_spec(spec)
        model = load_embedding_model(name, runtime)
        model.encode(texts[:64])  # warm-up
        models.append((label, model))
    rates: dict[str, list[float]] = {label: [] for label, _ in models}
    for round_ in range(args.rounds):
        for label, model in models if round_ % 2 == 0 else list(reversed(models)):
            started = time.perf_counter()
            model.encode(texts)
            rates[label].append(len(texts) / (time.perf_counter() - started))
    first = statistics.median(rates[models[0][0]])
    print(f"{len(texts)} sentences, {args.rounds} rounds")
    for label, values in rates.items():
        median = statistics.median(values)
        print(f"{label:>10}: best {max(values):7.1f}/s  median {median:7.1f}/s  ratio {median / first:.3f}")


if __name__ == "__main__":
    main()
