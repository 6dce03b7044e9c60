"""What the training tools promise on a CPU: frozen lower layers stay put, and bfloat16 only where it is
native. The model is a tiny BERT made here from a config, so nothing is downloaded."""

from __future__ import annotations

import torch
from transformers import BertConfig, BertForSequenceClassification

from indexer.embedder import has_native_bf16
from training.loop import freeze_lower_layers
from training.recipe import use_bf16


def _tiny() -> BertForSequenceClassification:
    config = BertConfig(
        vocab_size=50, hidden_size=16, num_hidden_layers=3, num_attention_heads=2, intermediate_size=32
    )
    return BertForSequenceClassification(config)


def test_freezing_two_layers_keeps_the_embeddings_and_those_layers_and_trains_the_rest() -> None:
    model = _tiny()
    assert freeze_lower_layers(model, 2) > 0
    trainable = {name for name, p in model.named_parameters() if p.requires_grad}
    assert not any(name.startswith("bert.embeddings.") for name in trainable)
    assert not any(".layer.0." in name or ".layer.1." in name for name in trainable)
    assert any(".layer.2." in name for name in trainable)
    assert any(name.startswith("classifier.") for name in trainable)


def test_a_frozen_layer_gets_no_gradient_and_the_head_does() -> None:
    model = _tiny()
    freeze_lower_layers(model, 2)
    ids = torch.tensor([[1, 5, 7, 2]])
    model(input_ids=ids).logits.sum().backward()
    assert model.bert.encoder.layer[0].attention.self.query.weight.grad is None
    assert model.classifier.weight.grad is not None


def test_freezing_no_layer_freezes_nothing() -> None:
    model = _tiny()
    assert freeze_lower_layers(model, 0) == 0
    assert all(p.requires_grad for p in model.parameters())


def test_bfloat16_is_used_on_a_cpu_only_where_it_is_native_and_always_where_asked_on_a_gpu() -> None:
    assert use_bf16(False, "cpu") is False
    assert use_bf16(True, "cuda") is True
    assert use_bf16(True, "cpu") is has_native_bf16()


def test_freezing_the_word_embeddings_alone_trains_every_layer_and_the_other_embeddings() -> None:
    model = _tiny()
    assert freeze_lower_layers(model, 0, word_embeddings=True) == 1
    frozen = {name for name, p in model.named_parameters() if not p.requires_grad}
    assert frozen == {"bert.embeddings.word_embeddings.weight"}
