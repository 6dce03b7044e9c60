"""The words that carry no content of their own, shared by the indexer (what makes a sentence a fragment,
`indexer.embedding_context`) and the engine (`engine.words`), so both agree on what a content word is."""

from __future__ import annotations

__all__ = ["STOPWORDS"]

STOPWORDS = frozenset(
    """a an the of in on at to for by with from as is are was were be been being and or but not no nor so
    what which who whom whose when where why how that this these those it its they them their there here
    do does did has have had can could would should will shall may might must than then also into onto
    about over under between both either neither same more less most least any all some such only very
    one i you he she we his her our your my me him us name named called""".split()  # noqa: SIM905
)
