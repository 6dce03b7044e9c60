"""A cross-encoder between two others in weight space: ``(1 - alpha) * base + alpha * tuned``.

Fine-tuning on one kind of data (docs questions mined from headings) moves a model towards that data and
away from what it knew (paraphrased questions, factoid sets). When ``tuned`` went on from ``base``
(``--start``), both sit in one basin, and the straight line between them holds models that keep much of what
fine-tuning gained and avoid much of what it cost (robust fine-tuning by weight interpolation). ``alpha``
is chosen on tuning data, never on held-out data.

    python -m training.soup --base FOLDER --tuned FOLDER --alpha A --out FOLDER

Writes fp16 safetensors with the tuned folder's config and tokenizer, and a ``training.json`` that is the
tuned run's with a ``soup`` entry naming both folders and ``alpha``.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

__all__ = ["interpolate", "main", "mix_folders"]

_WEIGHTS = "model.safetensors"
_COPIED = ("config.json", "tokenizer.json", "tokenizer_config.json")


def interpolate(
    base: dict[str, torch.Tensor], tuned: dict[str, torch.Tensor], alpha: float
) -> dict[str, torch.Tensor]:
    """Every tensor at ``alpha`` of the way from ``base`` to ``tuned``, in float32 then back to the tuned
    tensor's dtype. The two must hold the same tensors with the same shapes."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be within [0, 1], not {alpha}")
    if base.keys() != tuned.keys():
        missing = sorted(base.keys() ^ tuned.keys())[:5]
        raise ValueError(f"the two models hold different tensors (e.g. {missing})")
    out = {}
    for name, end in tuned.items():
        start = base[name]
        if start.shape != end.shape:
            raise ValueError(f"{name}: shape {tuple(start.shape)} against {tuple(end.shape)}")
        mixed = (1.0 - alpha) * start.float() + alpha * end.float()
        out[name] = mixed.to(end.dtype).contiguous()
    return out


def mix_folders(base: Path, tuned: Path, alpha: float, out: Path) -> None:
    """Write the interpolated model of two saved cross-encoder folders to ``out``."""
    weights = interpolate(load_file(base / _WEIGHTS), load_file(tuned / _WEIGHTS), alpha)
    out.mkdir(parents=True, exist_ok=True)
    save_file(weights, out / _WEIGHTS, metadata={"format": "pt"})
    for name in _COPIED:
        if (tuned / name).exists():
            shutil.copyfile(tuned / name, out / name)
    summary_file = tuned / "training.json"
    summary = json.loads(summary_file.read_text()) if summary_file.exists() else {}
    summary["soup"] = {"base": str(base), "tuned": str(tuned), "alpha": alpha}
    (out / "training.json").write_text(json.dumps(summary, indent=1) + "\n")
    for file in out.iterdir():
        file.chmod(0o644)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", type=Path, required=True, help="the model fine-tuning started from")
    ap.add_argument("--tuned", type=Path, required=True, help="the fine-tuned model")
    ap.add_argument("--alpha", type=float, required=True, help="0: base, 1: tuned")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    mix_folders(args.base, args.tuned, args.alpha, args.out)
    print(f"wrote {args.out}: {1 - args.alpha:g} x {args.base} + {args.alpha:g} x {args.tuned}")


if __name__ == "__main__":
    main()
