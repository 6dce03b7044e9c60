"""The cross-encoders' compute dtype as configured (`[models] cross_encoder_precision`), declared apart from
the models so that reading the configuration loads none of them; `engine.crossencoders` re-exports it."""

from __future__ import annotations

import enum

__all__ = ["CrossEncoderPrecision"]


class CrossEncoderPrecision(enum.Enum):
    """The dtype the cross-encoders compute in on a CPU (a GPU keeps the weights' own)."""

    AUTO = "auto"
    """bfloat16 where the CPU multiplies it in hardware (AMX or AVX-512 BF16), else float32."""
    FLOAT32 = "float32"
    BFLOAT16 = "bfloat16"
