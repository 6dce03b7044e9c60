"""Hybrid retrieval: fusion and de-duplication, the staged lexical lane, lanes before and after embedding.

The lane tests use the real all-MiniLM-L6-v2 from its package and the real embedding worker.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from engine.search import (
    Filters,
    Lane,
    LaneResult,
    LexicalHit,
    LexicalStage,
    RetrievalConfig,
    Retriever,
    SearchMode,
    StagedHit,
    edit_distance_one,
    fuse,
    load_hits,
    merge_stages,
    staged_lexical_search,
)
from indexer.database import Connection, Database
from indexer.embedder import EmbeddingModel
from indexer.embedding_queue import EmbeddingWorker
from indexer.reconcile import Repository, reconcile_repository

GUIDE = """# Bootstrapping

The compiler is bootstrapped in stages. Stage 0 downloads a prebuilt beta toolchain.

## Tests

UI tests compare the compiler's diagnostics with reference files. Run them with the test command.

## Queries

The query system memoizes results so that incremental compilation can reuse them.
"""


def _hit(sid: int, score: float = 1.0) -> LexicalHit:
    return LexicalHit(sid, score, 1)


def _text(conn: Connection, staged: StagedHit) -> str:
    """The text of a sentence the lexical lane ranked (the lane ranks ids; hits are loaded once, later)."""
    return load_hits(conn, [staged.hit.sentence_id])[0].text


def _index(conn: Connection, repo_dir: Path, text: str = GUIDE) -> None:
    """`text` as the one page of the repository "docs", indexed."""
    (repo_dir / "guide.md").write_text(text)
    reconcile_repository(conn, Repository("docs", repo_dir))


def test_rrf_rewards_agreement_and_respects_weights() -> None:
    lexical = LaneResult(Lane.LEXICAL, [(1, 9.0), (2, 8.0), (3, 7.0)])
    vector = LaneResult(Lane.VECTOR, [(3, 0.9), (4, 0.8)])
    fused = fuse([lexical, vector], rrf_k=60)
    assert [f.sentence_id for f in fused] == [3, 1, 2, 4]
    assert fused[0].lane_ranks == {Lane.LEXICAL: 3, Lane.VECTOR: 1}
    heavy_vector = fuse([lexical, LaneResult(Lane.VECTOR, [(4, 0.8)], weight=5.0)], rrf_k=60)
    assert heavy_vector[0].sentence_id == 4


def test_fusion_deduplicates_by_document_and_sentence_text() -> None:
    same = (7, b"hash")
    identity = {1: same, 2: same, 3: (7, b"other")}
    fused = fuse(
        [LaneResult(Lane.LEXICAL, [(1, 5.0), (2, 4.0), (3, 3.0)]), LaneResult(Lane.VECTOR, [(2, 0.9)])],
        identity=identity,
    )
    assert [f.sentence_id for f in fused] == [1, 3]
    assert fused[0].lane_ranks == {Lane.LEXICAL: 1, Lane.VECTOR: 1}


def test_later_stage_never_pushes_earlier_hits_down() -> None:
    exact = [StagedHit(_hit(1, 2.0), LexicalStage.EXACT), StagedHit(_hit(2, 1.0), LexicalStage.EXACT)]
    typo = [StagedHit(_hit(3, 50.0), LexicalStage.TYPO), StagedHit(_hit(1, 40.0), LexicalStage.TYPO)]
    merged = merge_stages([exact, typo], k=10)
    assert [(s.hit.sentence_id, s.stage) for s in merged] == [
        (1, LexicalStage.EXACT),
        (2, LexicalStage.EXACT),
        (3, LexicalStage.TYPO),
    ]
    assert [s.hit.sentence_id for s in merge_stages([exact, typo], k=2)] == [1, 2]


def test_edit_distance_one() -> None:
    variants = edit_distance_one("cat")
    assert {"at", "act", "cut", "cart"} <= variants
    assert "cat" not in variants
    assert "dog" not in variants


def test_typo_stage_corrects_against_the_index_vocabulary(conn: Connection, repo_dir: Path) -> None:
    _index(conn, repo_dir)
    confident = staged_lexical_search(conn, "query system memoizes", 5)
    assert confident.stages_run == [LexicalStage.EXACT]
    typo = staged_lexical_search(conn, "memoizes incrmental", 5)
    assert typo.corrections == {"incrment": "increment"}
    assert _text(conn, typo.hits[0]).startswith("The query system memoizes")
    assert LexicalStage.TYPO in typo.stages_run
    prefix = staged_lexical_search(conn, "bootstr", 5)
    assert LexicalStage.PREFIX in prefix.stages_run
    assert prefix.hits and prefix.hits[0].stage is LexicalStage.PREFIX
    assert "bootstrap" in _text(conn, prefix.hits[0]).lower()
    # An unknown term with no neighbour and no completion changes no variant: no repeated search.
    hopeless = staged_lexical_search(conn, "memoizes qzxvwk", 5)
    assert hopeless.stages_run == [LexicalStage.EXACT]
    assert _text(conn, hopeless.hits[0]).startswith("The query system memoizes")


def test_lexical_hits_come_before_embedding_then_vectors_join(
    retriever: Retriever, conn: Connection, repo_dir: Path, embedder: EmbeddingModel
) -> None:
    _index(conn, repo_dir)
    hits = retriever.search("beta toolchain download", 3)
    assert hits[0].text == "Stage 0 downloads a prebuilt beta toolchain."
    assert hits[0].embedded is False
    assert hits[0].lanes == ["lexical"]
    assert set(hits[0].scores) == {"bm25", "fused"}

    EmbeddingWorker(conn, embedder).drain()
    hits = retriever.search("beta toolchain download", 3)
    assert hits[0].text == "Stage 0 downloads a prebuilt beta toolchain."
    assert hits[0].embedded is True
    assert hits[0].lanes == ["lexical", "vector"]
    # A paraphrase with no shared keyword is found by the vector lane alone.
    semantic = retriever.search("caching answers to avoid recomputation", 3, mode=SearchMode.VECTOR)
    assert semantic[0].text.startswith("The query system memoizes")
    assert semantic[0].lanes == ["vector"]


def test_filters_apply_to_both_lanes(
    retriever: Retriever, conn: Connection, tmp_path: Path, embedder: EmbeddingModel
) -> None:
    for name in ("alpha", "beta"):
        (tmp_path / name / "sub").mkdir(parents=True)
        (tmp_path / name / "sub" / "g.md").write_text(GUIDE)
        (tmp_path / name / "top.md").write_text(GUIDE)
        reconcile_repository(conn, Repository(name, tmp_path / name))
    EmbeddingWorker(conn, embedder).drain()
    for mode in SearchMode:
        hits = retriever.search("compiler stages", 20, mode=mode, filters=Filters(("beta",), "sub/"))
        assert hits, mode
        assert {(h.repository, h.path) for h in hits} == {("beta", "sub/g.md")}, mode


class _RecordingReranker:
    """A fake relevance model (the real one is exercised in test_crossencoders): it scores a passage by
    how many times "Tests" (capitalised: only the heading has it) occurs, and records what it was given."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[str]]] = []

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        self.calls.append((query, list(passages)))
        return [p.count("Tests") / 10 for p in passages]


@pytest.mark.parametrize("with_heading", [True, False])
def test_reranker_reorders_the_fused_head_and_reads_the_heading(
    clean_database: Database, conn: Connection, repo_dir: Path, embedder: EmbeddingModel, with_heading: bool
) -> None:
    _index(conn, repo_dir)
    EmbeddingWorker(conn, embedder).drain()
    reranker = _RecordingReranker()
    config = RetrievalConfig(rerank_candidates=3, rerank_with_heading=with_heading, rerank_weight=100.0)
    retriever = Retriever(clean_database, embedder, reranker, config)
    try:
        hits = retriever.search("compiler", 10)
        lexical = retriever.search("compiler", 10, mode=SearchMode.LEXICAL)
    finally:
        retriever.close()
    ((query, passages),) = reranker.calls  # the lexical-only search is never reranked
    assert query == "compiler"
    assert len(passages) == 3
    assert all("rerank" in h.scores for h in hits[:3])
    assert all("rerank" not in h.scores for h in hits[3:] + lexical)
    assert [h.scores["rerank"] for h in hits[:3]] == sorted(
        (h.scores["rerank"] for h in hits[:3]), reverse=True
    )
    headed = [p for p in passages if p.startswith("Bootstrapping > Tests: ")]
    assert bool(headed) is with_heading
    if with_heading:  # only the heading says "Tests": reading it moved that sentence up
        assert hits[0].text.startswith("UI tests compare")
        assert hits[0].scores["rerank"] > hits[1].scores["rerank"]


def test_reranked_order_is_fused_again_with_the_fused_order(
    clean_database: Database, conn: Connection, repo_dir: Path, embedder: EmbeddingModel
) -> None:
    """With equal weights a sentence both rankings like beats one only the reranker likes."""
    _index(conn, repo_dir)
    EmbeddingWorker(conn, embedder).drain()
    config = RetrievalConfig(rerank_candidates=4, rrf_k=1.0)
    plain = Retriever(clean_database, embedder, None, config)
    blended = Retriever(clean_database, embedder, _RecordingReranker(), config)
    try:
        fused = [h.sentence_id for h in plain.search("compiler", 10)]
        hits = blended.search("compiler", 10)
    finally:
        plain.close()
        blended.close()
    head = hits[:4]
    # ties in the reranker's score keep fusion's order
    by_rerank = sorted(head, key=lambda h: (-h.scores["rerank"], fused.index(h.sentence_id)))
    for hit in head:
        expected = 1 / (1 + by_rerank.index(hit) + 1) + 1 / (1 + fused.index(hit.sentence_id) + 1)
        assert hit.scores["final"] == pytest.approx(expected)
        assert hit.score == hit.scores["final"]
    assert [h.scores["final"] for h in head] == sorted((h.scores["final"] for h in head), reverse=True)
    assert [h.sentence_id for h in hits[4:]] == fused[4:]


def test_a_corrected_word_ranks_its_sentence_above_hits_of_the_other_words(
    conn: Connection, repo_dir: Path
) -> None:
    """The exact query drops the word it cannot read, so its hits match only the other words and can fill
    every slot: the corrected query's hits come first."""
    _index(
        conn,
        repo_dir,
        "# Build\n\nThe build cache can grow large. The build writes logs.\n\n"
        "## Reuse\n\nIncremental compilation reuses earlier results.\n",
    )
    found = staged_lexical_search(conn, "build incrmental", 2)
    assert found.corrections == {"incrment": "increment"}
    assert found.hits[0].stage is LexicalStage.TYPO
    assert _text(conn, found.hits[0]) == "Incremental compilation reuses earlier results."


def test_a_typo_is_corrected_in_the_word_typed_when_stemming_moves_it_further(
    conn: Connection, repo_dir: Path
) -> None:
    """ "memroy" is one edit from "memory" but two from its lexeme "memori": the word typed is corrected."""
    _index(
        conn,
        repo_dir,
        "# Cache\n\nThe cache keeps results in memory.\n\nIt is cleared daily.\n",
    )
    found = staged_lexical_search(conn, "where are results kept, in memroy?", 3)
    assert found.corrections == {"memroy": "memori"}
    assert _text(conn, found.hits[0]) == "The cache keeps results in memory."


def test_many_unknown_words_or_a_very_long_one_are_no_typo(conn: Connection, repo_dir: Path) -> None:
    """Only the first few unknown words of a query, each of a word's length, are corrected: variants grow
    with a word's length, and a question of unknown words is not misspelt."""
    token = "cachetoken" * 4  # an indexed word longer than any typo is corrected from
    _index(
        conn,
        repo_dir,
        f"# Cache\n\nThe cache keeps results in memory.\n\nIts key is {token}.\n",
    )
    assert staged_lexical_search(conn, "cache memroy", 3).corrections == {"memroy": "memori"}
    gibberish = " ".join(f"qzx{letter}" for letter in "abcdefgh")
    assert staged_lexical_search(conn, f"{gibberish} memroy", 3).corrections == {}
    assert staged_lexical_search(conn, f"memroy {token[1:]}", 3).corrections == {"memroy": "memori"}


def test_a_number_is_never_corrected(conn: Connection, repo_dir: Path) -> None:
    """ "1800" is one edit from "100", and means another thing."""
    _index(conn, repo_dir, "# Dates\n\nThe bridge is 100 metres long.\n")
    assert staged_lexical_search(conn, "bridge built in 1800", 3).corrections == {}
