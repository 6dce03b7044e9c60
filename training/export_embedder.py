"""Export a fine-tuned MiniLM embedder to int8 ONNX, the runtime citeline's default embedder runs on.

    python -m training.export_embedder MODEL_DIR --out FILE [--check N]

The encoder is exported from torch with its `last_hidden_state` as the one output (citeline pools and
normalises itself, as `indexer.onnx_embedder` does), then its weights are quantized to int8 by onnxruntime's
dynamic quantization (per-channel off, as the packaged all-MiniLM-L6-v2 export). With `--check N` the first N
docs_faq sentences are embedded by the float32 torch model and the int8 export, and the cosine between the
two vectors of each sentence is printed (mean and minimum). Needs the `onnx` package (the `bench` extra).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import tempfile
from pathlib import Path

import numpy as np
import torch
from transformers import AutoModel


def export(model_dir: Path, out: Path) -> str:
    """Write the int8 export to `out`; returns its sha256."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model = AutoModel.from_pretrained(str(model_dir))
    model.eval()
    ids = torch.ones((2, 8), dtype=torch.int64)
    with tempfile.TemporaryDirectory() as tmp:
        plain = Path(tmp) / "model.onnx"
        torch.onnx.export(
            model,
            (ids, torch.ones_like(ids), torch.zeros_like(ids)),
            str(plain),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["last_hidden_state"],
            dynamic_axes={
                "input_ids": {0: "batch", 1: "tokens"},
                "attention_mask": {0: "batch", 1: "tokens"},
                "token_type_ids": {0: "batch", 1: "tokens"},
                "last_hidden_state": {0: "batch", 1: "tokens"},
            },
            opset_version=17,
            dynamo=False,
        )
        out.parent.mkdir(parents=True, exist_ok=True)
        quantize_dynamic(str(plain), str(out), weight_type=QuantType.QInt8)
    return hashlib.sha256(out.read_bytes()).hexdigest()


def agreement(model_dir: Path, onnx_file: Path, texts: list[str]) -> dict[str, float]:
    """Cosine between the float32 torch vector and the int8 export's vector of each text."""
    from indexer.embedder import load_embedding_model
    from indexer.onnx_embedder import load_onnx_int8

    reference = load_embedding_model(str(model_dir), runtime=_torch()).encode(texts)
    exported = load_onnx_int8(model_file=onnx_file).encode(texts)
    cosines = (reference * exported).sum(axis=1)
    return {"texts": len(texts), "mean_cosine": float(np.mean(cosines)), "min_cosine": float(np.min(cosines))}


def _torch():  # type: ignore[no-untyped-def]
    from indexer.embedder import EmbedderRuntime

    return EmbedderRuntime.TORCH


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("model", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--check", type=int, default=0)
    parser.add_argument("--data", type=Path, default=Path("../shared/traindata/docs_faq"))
    args = parser.parse_args(argv)
    digest = export(args.model, args.out)
    print(json.dumps({"file": str(args.out), "bytes": args.out.stat().st_size, "sha256": digest}))
    if args.check:
        from training.data import read_jsonl

        texts = [
            str(r["positive"])
            for r, _ in zip(read_jsonl(args.data / "pairs.jsonl.gz"), range(args.check), strict=False)
        ]
        print(json.dumps(agreement(args.model, args.out, texts)))


if __name__ == "__main__":
    main()
