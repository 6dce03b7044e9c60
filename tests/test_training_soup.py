"""Weight interpolation between two cross-encoder folders: the line from base to tuned, and clear refusals."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file, save_file

from training.card import render
from training.soup import interpolate, mix_folders


def _folder(path: Path, value: float) -> Path:
    path.mkdir()
    weights = {
        "layer.weight": torch.full((2, 3), value, dtype=torch.float16),
        "head.bias": torch.tensor([value]),
    }
    save_file(weights, path / "model.safetensors")
    (path / "config.json").write_text("{}")
    (path / "training.json").write_text(json.dumps({"lr": 3e-5}))
    return path


def test_alpha_walks_from_the_base_to_the_tuned_weights() -> None:
    base = {"w": torch.zeros(2), "b": torch.ones(1)}
    tuned = {"w": torch.full((2,), 4.0), "b": torch.full((1,), 3.0)}
    assert torch.equal(interpolate(base, tuned, 0.0)["w"], base["w"])
    assert torch.equal(interpolate(base, tuned, 1.0)["b"], tuned["b"])
    assert torch.allclose(interpolate(base, tuned, 0.25)["w"], torch.full((2,), 1.0))
    assert torch.allclose(interpolate(base, tuned, 0.5)["b"], torch.full((1,), 2.0))


def test_models_that_do_not_match_or_an_alpha_off_the_line_are_refused() -> None:
    with pytest.raises(ValueError, match="different tensors"):
        interpolate({"a": torch.zeros(1)}, {"b": torch.zeros(1)}, 0.5)
    with pytest.raises(ValueError, match="shape"):
        interpolate({"a": torch.zeros(1)}, {"a": torch.zeros(2)}, 0.5)
    with pytest.raises(ValueError, match="alpha"):
        interpolate({"a": torch.zeros(1)}, {"a": torch.zeros(1)}, 1.5)


def test_a_mixed_folder_keeps_the_tuned_dtype_config_and_says_how_it_was_made(tmp_path: Path) -> None:
    base, tuned = _folder(tmp_path / "base", 0.0), _folder(tmp_path / "tuned", 2.0)
    mix_folders(base, tuned, 0.5, tmp_path / "soup")
    weights = load_file(tmp_path / "soup" / "model.safetensors")
    assert weights["layer.weight"].dtype == torch.float16
    assert torch.allclose(weights["layer.weight"].float(), torch.ones(2, 3))
    assert (tmp_path / "soup" / "config.json").read_text() == "{}"
    summary = json.loads((tmp_path / "soup" / "training.json").read_text())
    assert summary["lr"] == 3e-5 and summary["soup"]["alpha"] == 0.5


def _summary(config: dict[str, Any], **head: Any) -> dict[str, Any]:
    """A training.json as a docs run from the shipped weights writes it, with `config` and `head` on top."""
    return {
        "config": {"lr": 3e-5, "batch_size": 32, "epochs": 1, "threads": 2, "device": "cpu", **config},
        "docs": True,
        "start": "engine/weights/relevance",
        "sources": {"docs_faq/pairs.jsonl.gz": {"rows": 10, "after_filter": 9, "train": 8, "val": 1}},
        "train_rows": 8,
        "val_rows": 1,
        "train_cpu_minutes": 1.0,
        "wall_minutes_last_session": 1.0,
        "validation": {"val_mrr10:all": 0.5},
        **head,
    }


def test_the_card_of_a_mixed_model_reproduces_both_the_fine_tuning_and_the_mix() -> None:
    soup = {"base": "engine/weights/relevance", "tuned": "/tmp/docs", "alpha": 0.3}
    training = _summary({"freeze_layers": 2}, soup=soup)
    card = render("relevance", training, [])
    assert "--out /tmp/tuned --docs --start BASE --lr 3e-05 --freeze-layers 2" in card
    assert (
        "python -m training.soup --base BASE --tuned /tmp/tuned --alpha 0.3 --out engine/weights/relevance"
        in card
    )
    assert "0.3 of the way from BASE" in card


def test_the_card_of_a_gpu_run_names_its_recipe_and_the_frozen_word_embeddings() -> None:
    config = {"batch_size": 64, "epochs": 2, "device": "cuda", "bf16": True, "freeze_word_embeddings": True}
    card = render("relevance", _summary(config, docs_recipe="docs6x"), [])
    assert "--docs --docs-recipe docs6x --start BASE --bf16 --lr 3e-05 --freeze-word-embeddings" in card
