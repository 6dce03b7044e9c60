"""Which embedder a setting names and which runtime runs it, decided without loading a model or numpy.

`daemon.config` validates `[models] embedder` and `embedder_runtime` with these, so reading the configuration
costs no model library; `indexer.embedder` loads what they choose (and re-exports them).
"""

from __future__ import annotations

import enum
from pathlib import Path

__all__ = [
    "BASE_MODEL_SPECS",
    "DEFAULT_MODEL_NAME",
    "DOCS_MODEL_NAME",
    "DOCS_MODEL_SPECS",
    "DOCS_ONNX_NAME",
    "SHIPPED_EMBEDDER",
    "EmbedderRuntime",
    "has_native_bf16",
    "runs_on_onnx",
]

DEFAULT_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
BASE_MODEL_SPECS = frozenset({DEFAULT_MODEL_NAME, "all-MiniLM-L6-v2"})
"""Specs that name the default model itself, which loads offline from its packages rather than the hub."""
DOCS_MODEL_NAME = "citeline/docs-minilm-l6-v3"
"""The docs embedder's recorded name: a new version is a new name, so the corpus is embedded again."""
DOCS_MODEL_SPECS = frozenset({DOCS_MODEL_NAME, "citeline-docs"})
DOCS_ONNX_NAME = f"{DOCS_MODEL_NAME} (onnx-int8)"
SHIPPED_EMBEDDER = "citeline-docs"
"""What a process loads when `[models] embedder` is empty: citeline's docs embedder (chosen on users' words,
`indexer/weights/embedder/README.md`); `embedder = "all-MiniLM-L6-v2"` keeps the base model."""


class EmbedderRuntime(enum.Enum):
    """What runs the embedder. `auto` is torch-bf16 on a CPU with native bfloat16, else onnx-int8 for the
    default model and torch for a named one."""

    AUTO = "auto"
    ONNX_INT8 = "onnx-int8"
    TORCH = "torch"
    TORCH_BF16 = "torch-bf16"


_BF16_CPU_FLAGS = frozenset({"amx_bf16", "avx512_bf16"})


def has_native_bf16(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether this CPU multiplies bfloat16 in hardware (AMX or AVX-512 BF16), read from `cpuinfo`'s flags;
    False where the file is missing or unreadable (bfloat16 is then emulated and slower than int8)."""
    try:
        with cpuinfo.open(encoding="utf-8", errors="replace") as lines:
            for line in lines:
                if line.startswith("flags"):
                    return not _BF16_CPU_FLAGS.isdisjoint(line.split(":", 1)[-1].split())
    except OSError:
        return False
    return False


def runs_on_onnx(spec: str) -> bool:
    """Whether the onnx-int8 runtime has this model: the default (empty spec, or named) or the docs one."""
    return not spec or spec in BASE_MODEL_SPECS or spec in DOCS_MODEL_SPECS
