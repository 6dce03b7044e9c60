"""The answer engine end to end on a real PostgreSQL with the real all-MiniLM-L6-v2 and the embedding worker.

The entailment model here is a small scripted one (a premise entails a hypothesis it contains; listed pairs
contradict), so each rule of the loop is tested on known verdicts; the shipped NLI model is exercised in
test_engine_verify.py when its weights are present.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engine.answers import Budget, Route, Status
from engine.contexts import fetch_contexts
from engine.controller import AnswerEngine, EngineConfig
from engine.planners import ExtractivePlanner
from engine.planning import Plan, PlannerError, PlannerState
from engine.search import Hit, Retriever
from engine.verdicts import Proposal
from indexer.database import Connection, Database
from indexer.embedder import EmbeddingModel
from indexer.hashing import normalize_sentence
from indexer.reconcile import Repository, reconcile_repository
from tests.engine_support import DOCS, ContainmentNLI, index_docs

DOCS_TEXT = " ".join(DOCS.values()).lower()


@pytest.fixture
def indexed(conn: Connection, repo_dir: Path, embedder: EmbeddingModel) -> Path:
    return index_docs(conn, repo_dir, embedder)


def test_bridge_question_takes_the_loop_and_cites_both_hops(
    new_engine: Callable[..., AnswerEngine],
    indexed: Path,
) -> None:
    engine = new_engine(entailment=ContainmentNLI())
    result = engine.answer("Where was the BCS title game that the team coached by Nick Saban played in held?")
    assert result.route is Route.REASON
    assert result.status is Status.ANSWER
    paths = {s.path for c in result.clauses for s in c.sources}
    assert {"lsu.md", "sugar.md"} <= paths or "sugar.md" in paths
    assert 1 <= len(result.trace) <= 6
    for clause in result.clauses:  # every emitted clause is entailed by (here: contained in) a cited source
        assert any(normalize_sentence(clause.clause) in normalize_sentence(s.text) for s in clause.sources)
        assert clause.verification.composite >= 0.6
        assert clause.confidence == pytest.approx(clause.verification.composite)
    body = result.to_dict()
    assert body["status"] == "answer" and body["route"] == "reason"
    source = body["clauses"][0]["sources"][0]
    assert set(source) >= {"sentence_id", "path", "heading", "line_start", "line_end", "text", "embedded"}
    assert source["embedded"] is True and "git_commit" in source
    assert {"round", "queries", "new_evidence", "accepted", "rejected", "timings_ms"} <= set(body["trace"][0])


def test_single_fact_with_a_confident_retrieval_takes_the_fast_path(
    new_engine: Callable[..., AnswerEngine],
    indexed: Path,
) -> None:
    engine = new_engine(entailment=ContainmentNLI())
    result = engine.answer("why does bread dough rise")
    assert result.route is Route.FAST
    assert len(result.trace) == 1
    assert result.status is Status.ANSWER
    assert result.clauses[0].sources[0].path == "cooking.md"


def test_nothing_verifiable_is_insufficient_not_forced(
    new_engine: Callable[..., AnswerEngine], indexed: Path
) -> None:
    class Inventing:
        name = "inventing"

        def plan(self, state: PlannerState, *, final: bool) -> Plan:
            return Plan([Proposal("The Rose Bowl was first played in 1902.")], [], True)

    engine = new_engine(entailment=ContainmentNLI(), planner=Inventing())
    result = engine.answer("When was the first Rose Bowl game played, and which team won it?")
    assert result.status is Status.INSUFFICIENT
    assert result.clauses == []
    assert result.trace[0].rejected and "entail" in result.trace[0].rejected[0].reason


@pytest.mark.parametrize(("budget", "rounds"), [(Budget.HIGH, 6), (Budget.MID, 5), (Budget.LOW, 3)])
def test_loop_is_bounded_and_never_repeats_a_search(
    budget: Budget,
    rounds: int,
    new_engine: Callable[..., AnswerEngine],
    indexed: Path,
) -> None:
    class Stubborn:
        """Never done, always asks the same search plus a fresh one."""

        name = "stubborn"

        def __init__(self) -> None:
            self.finals: list[bool] = []

        def plan(self, state: PlannerState, *, final: bool) -> Plan:
            self.finals.append(final)
            return Plan([], ["bread yeast", f"bowl game {state.round}"], False)

    planner = Stubborn()
    config = EngineConfig(hits_per_subquery=2, max_evidence=4, store=False)
    engine = new_engine(entailment=ContainmentNLI(), planner=planner, config=config)
    result = engine.answer("Which bowl is older, the Rose Bowl or the Sugar Bowl?", budget)
    assert len(result.trace) == rounds
    assert planner.finals == [False] * (rounds - 1) + [True]
    run = [q for t in result.trace for q in t.queries]
    assert run.count("bread yeast") == 1
    subqueries = result.trace[1:]  # a comparison's first round keeps its whole first retrieval
    assert all(len(t.new_evidence) <= 2 * len(t.queries) for t in subqueries)  # cap per subquery
    assert sum(len(t.new_evidence) for t in result.trace) == 4  # cap on all evidence held


class Searching:
    """Proposes nothing and always asks for a fresh search: a question nothing indexed answers."""

    name = "searching"

    def plan(self, state: PlannerState, *, final: bool) -> Plan:
        return Plan([], [] if final else [f"kitchen oven {state.round}"], False)


@pytest.mark.parametrize(("patience", "rounds"), [(1, 1), (2, 2), (0, 5)])
def test_a_one_hop_question_with_nothing_verified_stops_after_its_patience(
    patience: int, rounds: int, new_engine: Callable[..., AnswerEngine], indexed: Path
) -> None:
    config = EngineConfig(store=False, one_hop_patience=patience)
    engine = new_engine(entailment=ContainmentNLI(), planner=Searching(), config=config)
    result = engine.answer("what temperature suits a sourdough starter")
    assert result.route is Route.REASON and "temperature" not in DOCS_TEXT
    assert result.status is Status.INSUFFICIENT
    assert len(result.trace) == rounds
    stopped = [n for n in result.notes if "one-hop question with no verified clause" in n]
    assert stopped == (
        []
        if patience == 0
        else [f"a one-hop question with no verified clause after {rounds} round(s): stopped"]
    )


def test_a_multi_hop_question_is_not_stopped_by_one_hop_patience(
    new_engine: Callable[..., AnswerEngine], indexed: Path
) -> None:
    engine = new_engine(entailment=ContainmentNLI(), planner=Searching(), config=EngineConfig(store=False))
    result = engine.answer("Which bowl is older, the Rose Bowl or the Sugar Bowl?")
    assert result.route is Route.REASON
    assert len(result.trace) == 5
    assert not [n for n in result.notes if "one-hop" in n]


@pytest.mark.parametrize(
    ("question", "whole"),
    [
        ("Which bowl is older, the Rose Bowl or the Sugar Bowl?", True),
        ("Where was the BCS title game that the team coached by Nick Saban played in held?", False),
    ],
)
def test_a_comparison_keeps_its_whole_first_retrieval(
    new_engine: Callable[..., AnswerEngine],
    question: str,
    whole: bool,
    retriever: Retriever,
    indexed: Path,
) -> None:
    config = EngineConfig(first_k=6, hits_per_subquery=2, store=False)
    engine = new_engine(entailment=ContainmentNLI(), config=config)
    result = engine.answer(question)
    assert result.route is Route.REASON
    first = retriever.search(question, 6)
    sentences = [h for h in first if h.heading_path]  # not the pages' titles: the pool holds no heading
    expected = len(sentences) if whole else 2
    assert len(sentences) > 2
    assert len(result.trace[0].new_evidence) == expected


def test_a_one_hop_first_round_holds_first_hold_of_its_first_retrieval(
    new_engine: Callable[..., AnswerEngine], retriever: Retriever, indexed: Path
) -> None:
    question = "Where was the BCS title game that the team coached by Nick Saban played in held?"
    first = [h for h in retriever.search(question, 6) if h.heading_path]
    assert len(first) > 4
    held = []
    for hold in (0, 4):
        config = EngineConfig(first_k=6, hits_per_subquery=2, first_hold=hold, store=False)
        result = new_engine(entailment=ContainmentNLI(), config=config).answer(question)
        held.append(len(result.trace[0].new_evidence))
    assert held == [2, 4]


def test_a_round_the_planner_fails_is_planned_extractively_not_a_failed_answer(
    new_engine: Callable[..., AnswerEngine],
    retriever: Retriever,
    indexed: Path,
) -> None:
    class Flaky:
        name = "flaky"

        def plan(self, state: PlannerState, *, final: bool) -> Plan:
            if state.round == 1:
                raise PlannerError("malformed output twice")
            return ExtractivePlanner().plan(state, final=final)

    engine = new_engine(entailment=ContainmentNLI(), planner=Flaky())
    result = engine.answer("Where was the BCS title game that the team coached by Nick Saban played in held?")
    assert result.trace[0].planner_error == "malformed output twice"
    assert result.trace[0].planned_by == "extractive"
    assert all(t.planned_by is None for t in result.trace[1:])
    assert len(result.trace) >= 2
    assert result.status is Status.ANSWER


class FlakyRetriever:
    """Delegates to the real retriever but fails one query, as a broken lane would."""

    def __init__(self, inner: Retriever, failing: str) -> None:
        self.inner, self.failing = inner, failing

    def search(self, query: str, k: int = 10, **kwargs: Any) -> list[Hit]:
        if query == self.failing:
            raise RuntimeError("lane down")
        return self.inner.search(query, k, **kwargs)


def test_a_failing_subquery_does_not_sink_the_round_and_empty_ones_are_broadened(
    clean_database: Database, retriever: Retriever, embedder: EmbeddingModel, indexed: Path
) -> None:
    class TwoQueries:
        name = "two-queries"

        def plan(self, state: PlannerState, *, final: bool) -> Plan:
            if state.round == 1:
                return Plan([], ["explode", "yeast bread dough"], False)
            return ExtractivePlanner().plan(state, final=True)

    flaky = FlakyRetriever(retriever, "explode")
    engine = AnswerEngine(
        clean_database,
        flaky,
        embedder,
        entailment=ContainmentNLI(),
        planner=TwoQueries(),  # type: ignore[arg-type]
    )
    result = engine.answer("Which is older, the Rose Bowl or the Sugar Bowl?", use_store=False)
    second = result.trace[1]
    assert second.queries == ["explode", "yeast bread dough"]
    assert second.failed_searches == [{"query": "explode", "reason": "search failed: lane down"}]
    assert second.new_evidence  # the other subquery still brought evidence


def test_a_round_whose_picks_are_all_refused_asks_again_what_to_search(
    new_engine: Callable[..., AnswerEngine],
    indexed: Path,
) -> None:
    """A refused pick's subquery would follow a lead the answer does not hold; the planner is asked again,
    seeing the refusal, and only its second subquery is run."""

    class Guessing:
        name = "guessing"

        def __init__(self) -> None:
            self.seen_refusals: list[int] = []

        def plan(self, state: PlannerState, *, final: bool) -> Plan:
            self.seen_refusals.append(len(state.rejected))
            if state.round == 1 and not state.rejected:
                return Plan([Proposal("The Rose Bowl is in Tokyo.")], ["tokyo stadiums"], False)
            if state.round == 1:
                return Plan([], ["sugar bowl"], False)
            return Plan([], [], True)

    planner = Guessing()
    engine = new_engine(entailment=ContainmentNLI(), planner=planner)
    result = engine.answer("Which is older, the Rose Bowl or the Sugar Bowl?", use_store=False)
    assert result.trace[0].rejected and not result.trace[0].accepted
    assert planner.seen_refusals[:2] == [0, 1]
    assert result.trace[1].queries == ["sugar bowl"]
    assert "tokyo stadiums" not in [q for t in result.trace for q in t.queries]


def test_the_lead_of_a_cited_sentences_section_joins_the_evidence(
    new_engine: Callable[..., AnswerEngine],
    clean_database: Database,
    indexed: Path,
) -> None:
    """One hit is held; the lead that names the team rides along, listed right after the citation."""
    config = EngineConfig(first_k=1, hits_per_subquery=1, store=False)
    engine = new_engine(entailment=ContainmentNLI(), config=config)
    result = engine.answer("Which team compiled an 11-1 regular season record under coach Nick Saban?")
    cited = result.clauses[0].sources[0]
    assert cited.text.startswith("The Tigers compiled")
    with clean_database.connect() as conn:
        lead = conn.execute(
            "SELECT id FROM sentences WHERE text LIKE 'The 2003 LSU Tigers football team represented%'"
        ).fetchone()
    assert lead is not None
    evidence = result.trace[0].new_evidence
    assert evidence[evidence.index(cited.sentence_id) + 1] == lead[0]


def test_a_section_lead_is_the_first_sentence_under_the_same_heading(
    conn: Connection, repo_dir: Path
) -> None:
    (repo_dir / "guide.md").write_text(
        "# Guide\n\nFirst one. Second one.\n\n## Cache\n\nThird one. Fourth one.\n"
    )
    reconcile_repository(conn, Repository("docs", repo_dir))
    ids = {text: int(i) for i, text in conn.execute("SELECT id, text FROM sentences").fetchall()}
    contexts = fetch_contexts(conn, list(ids.values()))
    assert contexts[ids["Second one."]].lead == ids["First one."]
    assert contexts[ids["Fourth one."]].lead == ids["Third one."]  # its section's, not the document's
    assert contexts[ids["First one."]].lead is None and contexts[ids["Third one."]].lead is None
