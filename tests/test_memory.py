"""Answers the team has accepted: a sentence accepted for a question answers it again asked in other words,
verified like any other candidate and saying where it came from; never a question that asks something else,
never a sentence changed or deleted since, never one the team rejected for the question, never across keys."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import pytest

from engine.controller import AnswerEngine, EngineConfig, answer
from engine.feedback import give_feedback, question_key
from engine.gaps import find_gaps
from engine.search import Filters, Retriever
from engine.store import load_answer
from engine.verdicts import VerifyConfig
from indexer.database import Connection, Database
from indexer.embedder import EmbeddingModel
from indexer.feedback import accepted_pairs
from indexer.reconcile import Repository, reconcile_repository
from indexer.remembered import AcceptedAnswers
from tests.api_support import ContainmentNLI, index_two_repositories
from tests.engine_support import ScriptedPairs as _Pairs

ASKED = "How do I refresh the expected output of UI tests?"
REWORDED = "Refreshing expected UI test output: how?"
NEAR_MISS = "How do I run the UI tests?"
BLESSING = "Blessing updates the reference files."


@pytest.fixture
def ask(conn: Connection, tmp_path: Path, clean_database: Database, lexical_retriever: Retriever) -> Any:
    """Answers with the real engine (lexical lane, scripted NLI) and the team's accepted answers."""
    index_two_repositories(conn, tmp_path)
    config = EngineConfig(verify=VerifyConfig(threshold=0.5))
    engine = AnswerEngine(
        clean_database,
        lexical_retriever,
        None,
        entailment=ContainmentNLI(),
        config=config,
        pool=lexical_retriever.pool,
        memory=AcceptedAnswers(lexical_retriever.pool.connection, None),
    )

    def asking(question: str, repositories: tuple[str, ...] | None = None) -> dict[str, Any]:
        result: dict[str, Any] = answer(question, "mid", Filters(repositories), engine=engine).to_dict()
        return result

    return asking


def _sentence(conn: Connection, text: str) -> int:
    row = conn.execute("SELECT id FROM sentences WHERE text = %s", (text,)).fetchone()
    assert row is not None
    return int(row[0])


def _from_memory(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in result["clauses"] if c.get("chosen_by") == "team"]


def _accept(conn: Connection, ask: Any, question: str = ASKED, text: str = BLESSING) -> str:
    first = ask(question)
    assert not any(s["text"] == text for c in first["clauses"] for s in c["sources"]), "found on its own"
    give_feedback(conn, first["id"], True, [_sentence(conn, text)])
    answer_id: str = first["id"]
    return answer_id


def test_an_accepted_sentence_answers_the_question_asked_in_other_words(conn: Connection, ask: Any) -> None:
    first_id = _accept(conn, ask)
    result = ask(REWORDED)
    assert result["status"] == "answer"
    [clause] = _from_memory(result)
    assert [s["text"] for s in clause["sources"]] == [BLESSING]
    assert clause["remembered"]["question"] == ASKED and clause["remembered"]["answer_id"] == first_id
    assert set(clause["remembered"]) == {"question", "answer_id", "accepted_at"}
    assert clause["verification"]["entailment"] == 1.0 and clause["verification"]["composite"] >= 0.5
    assert result["trace"][-1]["chosen_by"][BLESSING] == "team"
    stored = load_answer(conn, result["id"])
    assert stored is not None and stored.to_dict()["clauses"][-1]["remembered"] == clause["remembered"]


class _Unconvinced:
    """A relevance model and answer check that rate every passage 0 (scripted: the shipped ones rate real
    text), so only the team's word can carry a sentence past their floors."""

    def score(self, query: str, passages: Any) -> list[float]:
        return [0.0 for _ in passages]


def test_a_vouched_sentence_passes_the_models_floors_whatever_their_scale(
    conn: Connection, tmp_path: Path, clean_database: Database, lexical_retriever: Retriever
) -> None:
    index_two_repositories(conn, tmp_path)
    strict = VerifyConfig(threshold=0.5, min_relevance=0.9, min_answer_check=0.95)
    engine = AnswerEngine(
        clean_database,
        lexical_retriever,
        None,
        entailment=ContainmentNLI(),
        relevance=_Unconvinced(),
        answer_check=_Unconvinced(),
        config=EngineConfig(verify=strict),
        pool=lexical_retriever.pool,
        memory=AcceptedAnswers(lexical_retriever.pool.connection, None),
    )
    first = answer(ASKED, "mid", Filters(), engine=engine).to_dict()
    give_feedback(conn, first["id"], True, [_sentence(conn, BLESSING)])
    reworded = "How do I refresh the expected output of UI tests locally?"  # overlap 0.91: vouched, < 0.95
    again = answer(reworded, "mid", Filters(), engine=engine).to_dict()
    [clause] = _from_memory(again)
    assert [s["text"] for s in clause["sources"]] == [BLESSING]


def test_a_question_on_the_same_topic_that_asks_something_else_does_not_get_it(
    conn: Connection, ask: Any
) -> None:
    _accept(conn, ask)
    result = ask(NEAR_MISS)
    assert _from_memory(result) == []
    assert not any(s["text"] == BLESSING for c in result["clauses"] for s in c["sources"])


def test_a_changed_accepted_sentence_is_never_served_from_memory_and_is_listed_stale(
    conn: Connection, ask: Any, tmp_path: Path
) -> None:
    _accept(conn, ask)
    page = tmp_path / "alpha" / "guide" / "tests.md"
    page.write_text(page.read_text().replace(BLESSING, "Blessing rewrites the reference files."))
    reconcile_repository(conn, Repository("alpha", tmp_path / "alpha"))
    stale = [g for g in find_gaps(conn, None) if g.kinds.get("stale")]
    assert [g.question for g in stale] == [ASKED]
    assert [p.sentence_text for p in accepted_pairs(conn, stale_only=True)] == [BLESSING]
    assert _from_memory(ask(REWORDED)) == []
    assert find_gaps(conn, None) == [], "asked again and verified (without memory), the gap closes"


def test_unhelpful_feedback_holds_the_sentence_back_for_that_question(conn: Connection, ask: Any) -> None:
    _accept(conn, ask)
    remembered = ask(REWORDED)
    assert _from_memory(remembered)
    record = give_feedback(conn, remembered["id"], False, [_sentence(conn, BLESSING)])
    assert record.rejected == (_sentence(conn, BLESSING),)
    again = ask(REWORDED)
    assert again["id"] != remembered["id"], "the stored answer is not served again after feedback"
    assert _from_memory(again) == []


def test_a_key_limited_to_other_repositories_never_gets_the_remembered_sentence(
    conn: Connection, ask: Any
) -> None:
    _accept(conn, ask)
    assert _from_memory(ask(REWORDED, ("beta",))) == []
    assert _from_memory(ask(REWORDED, ("alpha",)))
    memory = AcceptedAnswers(conn_factory(conn), None)
    key = question_key(REWORDED)
    assert memory.remembered(key, None, ["beta"], None, 5) == []
    assert [r.question for r in memory.remembered(key, None, ["alpha"], None, 5)] == [ASKED]
    assert memory.remembered(key, None, None, "recipes/", 5) == []


def test_without_feedback_an_answer_is_what_it_was(conn: Connection, ask: Any) -> None:
    result = ask(REWORDED)
    assert _from_memory(result) == [] and all("remembered" not in c for c in result["clauses"])


def test_stored_questions_are_embedded_once_and_compared_by_cosine(
    conn: Connection, ask: Any, embedder: EmbeddingModel
) -> None:
    _accept(conn, ask)
    memory = AcceptedAnswers(conn_factory(conn), embedder)
    vector = embedder.encode([REWORDED])[0]
    [close] = memory.remembered(question_key(REWORDED), vector.tolist(), None, None, 5)
    assert close.question == ASKED and close.similarity > 0.7
    row = conn.execute(
        "SELECT embedding_model, vector_dims(question_embedding) FROM accepted_answers"
    ).fetchone()
    assert row == (embedder.name, embedder.dimension)
    far = embedder.encode(["What temperature is bread baked at?"])[0]
    [distant] = memory.remembered(question_key("bread"), far.tolist(), None, None, 5)
    assert distant.similarity < close.similarity


def conn_factory(conn: Connection) -> Any:
    """A connect callable handing out the test's own connection (not closed by the store)."""
    from contextlib import nullcontext

    return partial(nullcontext, conn)


def test_a_near_question_is_offered_for_the_models_to_rate_and_only_a_close_one_is_vouched_for() -> None:
    from datetime import UTC, datetime

    from engine.memory import MemoryConfig, recall
    from indexer.remembered import Remembered

    now = datetime.now(UTC)
    close = Remembered("How do I bless UI tests?", "a1", now, 1, 0.9)
    near = Remembered("How do I run UI tests?", "a2", now, 2, 0.65)
    far = Remembered("What is a lint?", "a3", now, 3, 0.3)
    config = MemoryConfig(min_similarity=0.6, vouch_similarity=0.8)
    offered = recall(_Pairs(close, near, far), REWORDED, [1.0], Filters(), config)
    assert [(r.sentence_id, r.vouched) for r in offered] == [(1, True)], "only the closest question's"
    [rated] = recall(_Pairs(near, far), REWORDED, [1.0], Filters(), config)
    assert (rated.sentence_id, rated.vouched) == (2, False)
    same_key = Remembered(ASKED, "a4", now, 4, 0.1, question_key=question_key(ASKED))
    [again] = recall(_Pairs(same_key), ASKED, [1.0], Filters(), config)
    assert again.vouched, "the same question in other case and punctuation is the same question"
    overlapping = _Pairs(Remembered(ASKED, "a5", now, 5, 0.8))
    [without_embedder] = recall(overlapping, REWORDED, None, Filters(), config)
    assert without_embedder.vouched, "without an embedder the overlap floor is the only floor"


class _Matcher:
    """A question matcher, scripted (the trained one is measured in `bench/feedback_memory.py`): the score of
    each earlier question it is asked about, whichever way round, and the earlier questions it was asked."""

    def __init__(self, scores: dict[str, float]) -> None:
        self.scores = scores
        self.read: list[str] = []

    def score(self, query: str, passages: Any) -> list[float]:
        if query in self.scores:  # the earlier question read first
            self.read.append(query)
            return [self.scores[query] for _ in passages]
        self.read += list(passages)
        return [self.scores[p] for p in passages]


def test_with_a_matcher_its_score_decides_among_the_cosines_candidates_and_is_what_is_vouched() -> None:
    from datetime import UTC, datetime

    from engine.memory import MemoryConfig, recall
    from indexer.remembered import Remembered

    now = datetime.now(UTC)
    reworded = Remembered("How do I bless UI tests?", "a1", now, 1, 0.6)  # a low cosine, the same ask
    near = Remembered("How do I run UI tests?", "a2", now, 2, 0.9)  # a high cosine, another ask
    maybe = Remembered("UI test output files?", "a3", now, 3, 0.7)
    far = Remembered("What is a lint?", "a4", now, 4, 0.3)
    matcher = _Matcher({reworded.question: 0.95, near.question: 0.1, maybe.question: 0.6})
    config = MemoryConfig(match_similarity=0.45, min_match=0.5, vouch_match=0.8)
    pairs = _Pairs(reworded, near, maybe, far)
    offered = recall(pairs, REWORDED, [1.0], Filters(), config, matcher)
    assert [(r.sentence_id, r.vouched, r.similarity) for r in offered] == [(1, True, 0.95)]
    assert far.question not in matcher.read, "below the candidates' cosine the matcher is not asked"
    [rated] = recall(_Pairs(near, maybe, far), REWORDED, [1.0], Filters(), config, matcher)
    assert (rated.sentence_id, rated.vouched, rated.similarity) == (3, False, 0.6)
    rejected = Remembered(reworded.question, "a5", now, 1, 0.7, helpful=False)
    held = recall(_Pairs(reworded, maybe, rejected), REWORDED, [1.0], Filters(), config, matcher)
    assert [r.sentence_id for r in held] == [3], "a rejection for a matching question holds it back"


def test_only_one_earlier_questions_sentences_are_offered_and_none_when_two_score_alike() -> None:
    from datetime import UTC, datetime

    from engine.memory import MemoryConfig, recall
    from indexer.remembered import Remembered

    now = datetime.now(UTC)
    asked = "How do I bless UI tests?"
    both = [
        Remembered(asked, "a1", now, 1, 0.9, question_key="bless ui test"),
        Remembered(asked, "a1", now, 2, 0.9, question_key="bless ui test"),
    ]
    again = Remembered(asked, "a9", now, 2, 0.9, question_key="bless ui test")
    rival = Remembered("Where do UI test outputs live?", "a2", now, 3, 0.9, question_key="ui test output")
    config = MemoryConfig(match_similarity=0.45, min_match=0.2, vouch_match=0.2, min_lead=0.05)
    matcher = _Matcher({asked: 0.9, rival.question: 0.87})
    offered = recall(_Pairs(*both, again), REWORDED, [1.0], Filters(), config, matcher)
    assert [r.sentence_id for r in offered] == [1, 2], (
        "one question's sentences, the same question asked twice"
    )
    assert recall(_Pairs(*both, rival), REWORDED, [1.0], Filters(), config, matcher) == [], "two score alike"
    matcher.scores[rival.question] = 0.8
    offered = recall(_Pairs(*both, rival), REWORDED, [1.0], Filters(), config, matcher)
    assert [r.sentence_id for r in offered] == [1, 2], "a clear lead serves the closest question's sentences"
    shared = Remembered(rival.question, "a2", now, 1, 0.9, question_key="ui test output")
    matcher.scores[rival.question] = 0.89
    offered = recall(_Pairs(*both, shared), REWORDED, [1.0], Filters(), config, matcher)
    assert [r.sentence_id for r in offered] == [1, 2], "a question accepted for the same sentence is no rival"


def test_with_a_rater_the_question_whose_accepted_sentence_answers_the_new_one_is_the_closest() -> None:
    from datetime import UTC, datetime

    from engine.memory import MemoryConfig, recall
    from indexer.remembered import Remembered

    now = datetime.now(UTC)
    own = Remembered(ASKED, "a1", now, 1, 0.9, question_key="own")  # keys unlike the new question's
    other = Remembered(NEAR_MISS, "a2", now, 2, 0.9, question_key="other")
    far = Remembered("What is a lint?", "a3", now, 3, 0.3, question_key="lint")
    config = MemoryConfig(
        match_similarity=0.4, min_match=0.2, vouch_match=0.2, min_lead=0.05, answer_weight=0.5
    )
    matcher = _Matcher({ASKED: 0.6, NEAR_MISS: 0.58})
    assert recall(_Pairs(own, other), REWORDED, [1.0], Filters(), config, matcher) == [], (
        "alike by the matcher"
    )
    asked: list[tuple[str, list[int]]] = []

    def rate(question: str, ids: Any) -> dict[int, float]:
        asked.append((question, list(ids)))
        return {1: 0.9, 2: 0.1}

    [offered] = recall(_Pairs(own, other, far), REWORDED, [1.0], Filters(), config, matcher, rate)
    assert offered.sentence_id == 1, "the sentence that answers the new question tells the two apart"
    assert offered.similarity == pytest.approx(0.5 * 0.6 + 0.5 * 0.9)
    assert asked == [(REWORDED, [1, 2])], "only the matcher's candidates are rated, in one call"
    off = MemoryConfig(match_similarity=0.4, min_match=0.2, vouch_match=0.2, min_lead=0.05, answer_weight=0)
    assert recall(_Pairs(own, other), REWORDED, [1.0], Filters(), off, matcher, rate) == [], "weight 0: off"
    matcher.scores.update({ASKED: 0.3, NEAR_MISS: 0.04})  # the matcher: the other question differs

    def answers_the_other(question: str, ids: Any) -> dict[int, float]:
        asked.append((question, list(ids)))
        return {1: 0.2, 2: 0.9}

    asked.clear()
    [gated] = recall(_Pairs(own, other), REWORDED, [1.0], Filters(), config, matcher, answers_the_other)
    assert asked == [(REWORDED, [1])], "a question the matcher says differs is not rated"
    assert gated.sentence_id == 1, "its sentence answers a question nobody asked: it does not take the lead"


def test_the_rater_reads_each_sentence_as_the_verifier_does_and_keeps_its_rating(
    conn: Connection, tmp_path: Path, clean_database: Database
) -> None:
    from engine.crossencoders import load_relevance
    from engine.evidence import EvidencePool
    from engine.memory import rater

    index_two_repositories(conn, tmp_path)
    blessing, bread = _sentence(conn, BLESSING), _sentence(conn, "Bake the bread at 220 degrees.")
    pool = EvidencePool(None)
    rated = rater(conn_factory(conn), pool, load_relevance())(ASKED, [blessing, bread])
    assert set(rated) == {blessing, bread}
    assert rated[blessing] > rated[bread], "the sentence that answers rates above one that does not"
    assert pool.ratings[ASKED] == rated, "kept in the pool: the verifier does not rate it again"
    assert rater(conn_factory(conn), pool, load_relevance())(ASKED, []) == {}


def test_the_shipped_matcher_tells_a_rewording_from_a_question_that_asks_something_else() -> None:
    from engine.crossencoders import load_question_match
    from engine.memory import MemoryConfig

    config = MemoryConfig()
    reworded, near_miss = load_question_match().score(ASKED, [REWORDED, NEAR_MISS])
    assert reworded >= config.vouch_match > near_miss
