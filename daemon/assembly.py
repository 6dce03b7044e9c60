"""The one place a process's parts are built: its configuration and database, the models, the retriever, and
the answer engine sharing the retriever's connection pool.

`citeline search`, `ask`, `api` and `serve`, the embedder services and the benches take their parts from
here, so every command that answers runs the same engine as `POST /v1/answers`. Nothing here imports the
API: `citeline ask` answers without it, and the API is handed what is built here.

Model loading is slow (seconds) and optional pieces may be absent (a reranker whose weights are not
installed): a missing shipped cross-encoder degrades search to fused ranking, and answers to what the engine
does without it, with a warning instead of failing. A model the configuration names must load: one that does
not is a `ConfigError` naming the setting, which the commands print as one line.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import structlog

from daemon.config import Config, ConfigError, PlannerKind, load_config
from engine.precision import CrossEncoderPrecision
from engine.search import Filters, RetrievalConfig, Retriever, SearchMode
from indexer.database import Database, open_database
from indexer.runtimes import EmbedderRuntime

if TYPE_CHECKING:  # model and engine code is imported where it is used: `search --lane lexical` loads none
    from engine.answers import Answer
    from engine.config import EngineConfig
    from engine.controller import AnswerEngine
    from engine.crossencoders import RelevanceModel
    from engine.llm_planner import LLMConfig, LLMPlanner
    from indexer.embedder import EmbeddingModel

__all__ = [
    "NO_MODEL",
    "Engine",
    "ModelNames",
    "build_engine",
    "build_retriever",
    "embed_child_torch_threads",
    "load_embedder",
    "load_reranker",
    "model_names",
    "open_process",
    "serving_torch_threads",
    "set_torch_threads",
]

T = TypeVar("T")
NO_MODEL = "none"
"""A model setting that turns an optional model off (`[models] answer_check = "none"`)."""
log = structlog.get_logger(__name__)


def set_torch_threads(threads: int) -> None:
    """`[models] torch_threads`: torch's intra-op threads for this process (0 leaves torch's default)."""
    if threads > 0:
        import torch  # lazily: commands that load no model must not pay for importing torch

        torch.set_num_threads(threads)


def serving_torch_threads(configured: int | None, *, serving: bool) -> int:
    """`[models] torch_threads` as a process applies it: unset is one thread in a process that serves the
    API (its requests run in parallel, one core each) and torch's default (0) in any other."""
    if configured is not None:
        return configured
    return 1 if serving else 0


def embed_child_torch_threads(configured: int | None) -> int:
    """Threads for `serve`'s embedder child: unset is every core but one (at its lower priority it takes
    what the watcher and the API leave, and leaves them one core's worth); a set value is passed on."""
    if configured is not None:
        return configured
    return max(1, (os.cpu_count() or 1) - 1)


def open_process(path: Path | None, *, serving: bool = False) -> tuple[Config, Database]:
    """A command's configuration (`path`, else `$CITELINE_CONFIG`, with `CITELINE_*` overrides), torch's
    threads set from it (`serving`: the process serves the API), and its database, migrated (an embedded
    one started when no URL is configured)."""
    config = load_config(path)
    set_torch_threads(serving_torch_threads(config.models.torch_threads, serving=serving))
    return config, open_database(config.database_url, config.data_dir)


@dataclass(frozen=True, slots=True)
class ModelNames:
    """Model names or paths; empty means the model shipped with citeline (the `[models]` section).
    `llm` set means the LLM planner on that endpoint instead of the extractive one."""

    embedder: str = ""
    reranker: str = ""
    entailment: str = ""
    llm: LLMConfig | None = None
    embedder_runtime: EmbedderRuntime = EmbedderRuntime.AUTO
    cross_encoder_precision: CrossEncoderPrecision = CrossEncoderPrecision.AUTO
    answer_check: str = ""
    """Empty: the shipped answer check; `NO_MODEL` ("none"): answers go without one."""
    question_match: str = ""
    """Empty: the memory's shipped question matcher; `NO_MODEL` ("none"): the embedder's cosine decides."""


def model_names(config: Config) -> ModelNames:
    """The models and planner a serving process loads, from `[models]` and `[planner]`."""
    from engine.llm_planner import LLMConfig

    planner = config.planner
    llm = (
        LLMConfig(
            planner.url,
            planner.model,
            planner.api_key or None,
            planner.timeout_seconds,
            planner.max_evidence,
            planner.max_tokens,
            planner.budget_seconds,
            planner.role,
            planner.variants,
            planner.reader_candidates,
            planner.none_doubt,
        )
        if planner.kind is PlannerKind.LLM
        else None
    )
    return ModelNames(
        config.models.embedder,
        config.models.reranker,
        config.models.entailment,
        llm,
        config.models.embedder_runtime,
        config.models.cross_encoder_precision,
        config.models.answer_check,
        config.models.question_match,
    )


def load_embedder(config: Config) -> EmbeddingModel:
    """The configured embedder on its runtime (`[models] embedder`, `embedder_runtime`), offline."""
    models = config.models
    return _embedder(models.embedder, models.embedder_runtime, config.embedding.batch_tokens)


def load_reranker(config: Config) -> RelevanceModel | None:
    """The configured (or shipped) relevance cross-encoder; None when the shipped one is not installed."""
    return _reranker(config.models.reranker, config.models.cross_encoder_precision)


def _reranker(name: str, precision: CrossEncoderPrecision) -> RelevanceModel | None:
    from engine.crossencoders import load_relevance

    return _shipped_or_named(partial(load_relevance, precision=precision), name, "models.reranker")


def _embedder(name: str, runtime: EmbedderRuntime, batch_tokens: int = 0) -> EmbeddingModel:
    from indexer.embedder import load_embedding_model

    def load(spec: str) -> EmbeddingModel:
        return load_embedding_model(spec, runtime, batch_tokens=batch_tokens)

    return _named(load, name, "models.embedder") if name else load(name)


def _named(loader: Callable[[str], T], name: str, key: str) -> T:
    """The model the setting `key` names, or a ConfigError saying that it could not be loaded and why (a
    path that does not exist, a Hugging Face name with no network, weights of another kind)."""
    try:
        return loader(name)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{key}: cannot load {name!r}: {exc}") from exc


def build_retriever(config: Config, database: Database, mode: SearchMode = SearchMode.HYBRID) -> Retriever:
    """A retriever with only the models `mode` needs: lexical search loads none, and the reranker is loaded
    only when `[retrieval] rerank_candidates` asks for reranking."""
    embedder = load_embedder(config) if mode is not SearchMode.LEXICAL else None
    reranks = mode is SearchMode.HYBRID and config.retrieval.rerank_candidates > 0
    reranker = load_reranker(config) if reranks else None
    return Retriever(database, embedder, reranker, config.retrieval)


@dataclass(frozen=True, slots=True)
class Engine:
    """The answering side of a process: the retriever and the answer engine over one connection pool (the
    retriever's), so no round of an answer opens a connection of its own. `close` releases both."""

    retriever: Retriever
    engine: AnswerEngine
    planner: LLMPlanner | None = None
    """The LLM planner the engine plans with, when `[planner]` configures one (its `probe` is reported)."""

    def answer(self, question: str, budget: str, filters: Filters) -> Answer:
        """The callable `POST /v1/answers` and `citeline ask` run: `engine.controller.answer` on this
        engine."""
        from engine.controller import answer

        return answer(question, budget, filters, engine=self.engine)

    def close(self) -> None:
        """Release the pooled connections and lane threads (the engine holds none of its own), and the
        planner's HTTP client."""
        self.retriever.close()
        if self.planner is not None:
            self.planner.close()


def _shipped_or_named(loader: Callable[[str | None], T], name: str, key: str) -> T | None:
    """A named model must load (`_named`); the shipped one may be absent from a checkout (its weights are
    trained separately), and then the process runs without it, as it is built to, with a warning saying so."""
    if name:
        return _named(loader, name, key)
    try:
        return loader(None)
    except FileNotFoundError as exc:
        log.warning("shipped model missing; running without it", setting=key, error=str(exc))
        return None


def build_engine(
    database: Database,
    models: ModelNames,
    retrieval: RetrievalConfig | None = None,
    engine: EngineConfig | None = None,
    *,
    compare_disk: bool = False,
) -> Engine:
    """Load the models and build the retriever and the answer engine over its pool (seconds); `engine`
    replaces the answer engine's defaults (benches compare settings with it). `compare_disk`: no watcher
    keeps this process's index current, so answers warn of files changed on disk since indexed. The engine
    offers again the sentences the team accepted (`indexer.remembered.AcceptedAnswers`, `engine.memory`)."""
    from engine.controller import AnswerEngine
    from engine.crossencoders import load_answer_check, load_entailment, load_question_match
    from engine.llm_planner import model_planner

    embedder = _embedder(models.embedder, models.embedder_runtime)
    precision = models.cross_encoder_precision
    reranker = _reranker(models.reranker, precision)
    entailment = _shipped_or_named(
        partial(load_entailment, precision=precision), models.entailment, "models.entailment"
    )
    check = (
        None
        if models.answer_check == NO_MODEL
        else _shipped_or_named(
            partial(load_answer_check, precision=precision), models.answer_check, "models.answer_check"
        )
    )
    match = (
        None
        if models.question_match == NO_MODEL
        else _shipped_or_named(
            partial(load_question_match, precision=precision), models.question_match, "models.question_match"
        )
    )
    from indexer.remembered import AcceptedAnswers

    retriever = Retriever(database, embedder, reranker, retrieval)
    planner = model_planner(models.llm) if models.llm is not None else None
    answers = AnswerEngine(
        database,
        retriever,
        embedder,
        entailment=entailment,
        relevance=reranker,
        planner=planner,
        pool=retriever.pool,
        config=engine,
        answer_check=check,
        compare_disk=compare_disk,
        memory=AcceptedAnswers(retriever.pool.connection, embedder),
        question_match=match,
    )
    return Engine(retriever, answers, planner)
