"""Token batches for the models that encode text: the embedders and the cross-encoders.

A batch is padded to its longest row, so rows are sorted by length and cut into batches whose rows times
longest length stay within a budget: short rows go wide, long rows narrow, and padding costs little.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["Vectors", "token_batches", "untruncated_tokenizer"]

Vectors = npt.NDArray[np.float32]


def token_batches(lengths: Sequence[int], batch_tokens: int) -> list[list[int]]:
    """Indices of `lengths` sorted by length (ascending, stable), cut so that each batch's rows times its
    longest length stays within `batch_tokens`; every index appears once, an overlong one alone."""
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    batches: list[list[int]] = []
    current: list[int] = []
    for index in order:
        if current and (len(current) + 1) * lengths[index] > batch_tokens:
            batches.append(current)
            current = []
        current.append(index)
    if current:
        batches.append(current)
    return batches


def untruncated_tokenizer(backend: Any) -> Any:
    """A private copy of a fast tokenizer's Rust `Tokenizer` with truncation and padding off, or None."""
    if backend is None or not hasattr(backend, "to_str"):
        return None
    from tokenizers import Tokenizer

    copy = Tokenizer.from_str(backend.to_str())
    copy.no_truncation()
    copy.no_padding()
    return copy
