"""Export a fine-tuned MiniLM embedder to int8 ONNX, the runtime citeline's default embedder runs on.

    python -m training.export_embedder MODEL_DIR --out FILE [--torch-out DIR] [--check N]

The encoder is exported from torch with its `last_hidden_state` as the one output (citeline pools and
normalises itself, as `indexer.onnx_embedder` does), then every weight matrix is stored as int8 with one
float32 scale per column (symmetric, round to nearest) and turned back into float32 in the graph by a Cast
and a Mul, as the packaged all-MiniLM-L6-v2 export does: onnxruntime folds those into float32 constants when
it loads the model, so the arithmetic is float32 and the vectors stay close to torch's. (onnxruntime's
dynamic quantization, which also computes in int8, gave cosine 0.96 on average against float32: too far.)
`--torch-out` also writes the model as a sentence-transformers folder with float16 weights (what the torch
runtimes load and upcast, half the bytes of float32). With `--check N` the first N docs_faq sentences are
embedded by the float32 torch model and the int8 export, and the cosine between the two vectors of each
sentence is printed (mean and minimum). Needs the `onnx` package (the `bench` extra).
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


class _Hidden(torch.nn.Module):
    """The encoder called by keyword, returning its token states only."""

    def __init__(self, encoder: torch.nn.Module) -> None:
        super().__init__()
        self.encoder = encoder

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor
    ) -> torch.Tensor:
        out = self.encoder(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
        return out.last_hidden_state  # type: ignore[no-any-return]


def int8_weights(plain: Path, out: Path) -> None:
    """Store each float32 weight matrix of the ONNX model `plain` as int8 with per-column scales, restored to
    float32 by Cast and Mul nodes under the matrix's own name."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load(str(plain))
    kept, nodes = [], []
    for init in model.graph.initializer:
        weight = numpy_helper.to_array(init)
        if weight.dtype != np.float32 or weight.ndim != 2 or weight.size < 4096:
            kept.append(init)
            continue
        scale = np.abs(weight).max(axis=0) / 127.0
        scale[scale == 0] = 1.0
        quantized = np.clip(np.round(weight / scale), -127, 127).astype(np.int8)
        name = init.name
        kept += [
            numpy_helper.from_array(quantized, f"{name}_q"),
            numpy_helper.from_array(scale.astype(np.float32), f"{name}_scale"),
        ]
        nodes += [
            helper.make_node("Cast", [f"{name}_q"], [f"{name}_f"], name=f"{name}_cast", to=TensorProto.FLOAT),
            helper.make_node("Mul", [f"{name}_f", f"{name}_scale"], [name], name=f"{name}_mul"),
        ]
    del model.graph.initializer[:]
    model.graph.initializer.extend(kept)
    original = list(model.graph.node)
    del model.graph.node[:]
    model.graph.node.extend(nodes + original)
    onnx.save(model, str(out))


def export(model_dir: Path, out: Path) -> str:
    """Write the int8 export to `out`; returns its sha256."""
    model = _Hidden(AutoModel.from_pretrained(str(model_dir)))
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
        int8_weights(plain, out)
    return hashlib.sha256(out.read_bytes()).hexdigest()


def torch_copy(model_dir: Path, out: Path) -> None:
    """`model_dir` as a sentence-transformers folder with float16 weights."""
    from transformers import AutoTokenizer

    from training.train_embedder import copy_pooling

    model = AutoModel.from_pretrained(str(model_dir)).half()
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out))
    AutoTokenizer.from_pretrained(str(model_dir)).save_pretrained(str(out))
    copy_pooling(model_dir, out)


def agreement(model_dir: Path, onnx_file: Path, texts: list[str]) -> dict[str, float]:
    """Cosine between the float32 torch vector and the int8 export's vector of each text."""
    from indexer.embedder import EmbedderRuntime, load_embedding_model
    from indexer.onnx_embedder import load_onnx_int8

    reference = load_embedding_model(str(model_dir), runtime=EmbedderRuntime.TORCH).encode(texts)
    exported = load_onnx_int8(model_file=onnx_file).encode(texts)
    cosines = (reference * exported).sum(axis=1)
    return {"texts": len(texts), "mean_cosine": float(np.mean(cosines)), "min_cosine": float(np.min(cosines))}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("model", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--check", type=int, default=0)
    parser.add_argument("--torch-out", type=Path)
    parser.add_argument("--data", type=Path, default=Path("../shared/traindata/docs_faq"))
    args = parser.parse_args(argv)
    digest = export(args.model, args.out)
    print(json.dumps({"file": str(args.out), "bytes": args.out.stat().st_size, "sha256": digest}))
    if args.torch_out is not None:
        torch_copy(args.model, args.torch_out)
    if args.check:
        from training.data import read_jsonl

        texts = [
            str(r["positive"])
            for r, _ in zip(read_jsonl(args.data / "pairs.jsonl.gz"), range(args.check), strict=False)
        ]
        print(json.dumps(agreement(args.model, args.out, texts)))


if __name__ == "__main__":
    main()
