"""Sentence identity: the normalized hash that decides whether a sentence changed.

Two sentences are "the same" when they differ only in case, Unicode compatibility forms or whitespace, so
re-wrapping a paragraph or fixing a capital letter never rewrites rows or triggers a re-embedding.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

__all__ = ["content_hash", "normalize_sentence", "sentence_hash"]

_WHITESPACE = re.compile(r"\s+")


def normalize_sentence(text: str) -> str:
    """NFKC, lowercased, whitespace folded to single spaces and stripped."""
    return _WHITESPACE.sub(" ", unicodedata.normalize("NFKC", text).lower()).strip()


def sentence_hash(text: str) -> bytes:
    """16-byte BLAKE2b of the normalized text: compact to index, collision-safe in practice."""
    return hashlib.blake2b(normalize_sentence(text).encode("utf-8"), digest_size=16).digest()


def content_hash(data: bytes) -> str:
    """Hex digest of a file's raw bytes, compared to skip unchanged files without parsing them."""
    return hashlib.blake2b(data, digest_size=20).hexdigest()
