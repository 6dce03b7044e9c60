"""citeline's configuration: one TOML file, then `CITELINE_*` environment overrides, validated at start.

Every section is a frozen dataclass with defaults, so a bare `citeline index ./docs` works with no file at
all. Environment variables override single keys as `CITELINE_<SECTION>__<KEY>` (for example
`CITELINE_API__PORT=9000`); `CITELINE_DATA_DIR` and `CITELINE_DATABASE_URL` are the two top-level ones.
Errors name the file, the key and what was expected, and are raised before anything touches the database.
"""

from __future__ import annotations

import dataclasses
import enum
import os
import tomllib
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.llm_role import LLMRole
from engine.precision import CrossEncoderPrecision
from engine.search import RetrievalConfig
from indexer.embedding_context import PreviousSentence
from indexer.forge import LinkTemplateError, check_template
from indexer.options import CodeMode, QueueOptions
from indexer.runtimes import EmbedderRuntime, runs_on_onnx

__all__ = [
    "ApiConfig",
    "Config",
    "ConfigError",
    "EmbeddingConfig",
    "IndexingConfig",
    "ModelsConfig",
    "PlannerConfig",
    "PlannerKind",
    "RepositoryConfig",
    "ThresholdsConfig",
    "WatchConfig",
    "default_data_dir",
    "load_config",
]


class ConfigError(ValueError):
    """The configuration is invalid; the message says where and why."""


@dataclass(frozen=True, slots=True)
class RepositoryConfig:
    """A folder of Markdown to index, under a stable name (the folder's name by default)."""

    path: Path
    name: str = ""
    include: tuple[str, ...] = ("**/*.md", "**/*.markdown")
    exclude: tuple[str, ...] = ()
    link: str = ""
    """The forge permalink template (`{commit}`, `{path}`, `{start}`, `{end}`); empty derives it from the
    checkout's origin remote, for forges known by host name only."""

    def __post_init__(self) -> None:
        if self.link:
            try:
                check_template(self.link)
            except LinkTemplateError as exc:
                raise ConfigError(f"repositories ({self.path}).link: {exc}") from None


@dataclass(frozen=True, slots=True)
class IndexingConfig:
    """How files are read and split into sentences."""

    max_file_bytes: int = 2_000_000
    code_blocks: CodeMode = CodeMode.BLOCK
    """Code blocks are units of their own, linked to the sentence introducing each; "skip" drops them."""


@dataclass(frozen=True, slots=True)
class ModelsConfig:
    """Model names or paths; empty means the model shipped with citeline."""

    embedder: str = ""
    """Empty: citeline's docs embedder (`citeline-docs`, `indexer.runtimes.SHIPPED_EMBEDDER`);
    `"all-MiniLM-L6-v2"` the base model it was trained from (the default until #50); a folder or a
    sentence-transformers name another. A change re-embeds every index once."""
    embedder_runtime: EmbedderRuntime = EmbedderRuntime.AUTO
    """`auto`: torch-bf16 on a CPU with native bfloat16, else int8 ONNX for a shipped embedder (the default
    docs embedder, or the bundled all-MiniLM-L6-v2) and torch for another; `torch-bf16`, `onnx-int8` or
    `torch` to force."""
    reranker: str = ""
    entailment: str = ""
    answer_check: str = ""
    """The verifier's second reading of a clause's sources, trained on docs to refuse near misses
    (`engine.crossencoders.load_answer_check`); "none" answers without it."""
    question_match: str = ""
    """Whether a new question asks what a question the team accepted an answer for asked
    (`engine.crossencoders.load_question_match`, `engine.memory`); empty: the shipped matcher, "none": the
    embedder's cosine decides."""
    cross_encoder_precision: CrossEncoderPrecision = CrossEncoderPrecision.AUTO
    """What the reranker and entailment model compute in on a CPU: `auto` is bfloat16 where the CPU has it
    in hardware, else float32."""
    torch_threads: int | None = None
    """torch's intra-op threads in this process; 0 keeps torch's default (one per core). Unset: one in the
    processes that serve the API (`serve`, `api`), so concurrent requests do not oversubscribe the cores,
    and torch's default elsewhere (`serving_torch_threads`)."""

    def __post_init__(self) -> None:
        if not runs_on_onnx(self.embedder) and self.embedder_runtime is EmbedderRuntime.ONNX_INT8:
            raise ConfigError(
                f'models.embedder_runtime: "onnx-int8" runs only the shipped embedder (or "citeline-docs"),'
                f" not {self.embedder!r}; leave models.embedder empty or set"
                ' embedder_runtime = "torch" (or "auto")'
            )


class PlannerKind(enum.Enum):
    """Who proposes the clauses of an answer; either way the engine verifies every one."""

    EXTRACTIVE = "extractive"
    """Source sentences chosen for the question; no LLM, no network (the default)."""
    LLM = "llm"
    """An OpenAI-compatible chat-completions endpoint (`url`, `model`, `api_key`)."""


@dataclass(frozen=True, slots=True)
class PlannerConfig:
    """The answer planner; `api_key` is best given as `CITELINE_PLANNER__API_KEY`, not in the file."""

    kind: PlannerKind = PlannerKind.EXTRACTIVE
    url: str = ""
    """The API base, for example `http://localhost:11434/v1` (Ollama)."""
    model: str = ""
    api_key: str = ""
    budget_seconds: float = 10.0
    """The time one answer may take with the model, counted from the question's arrival; the model's calls
    stop early enough for verifying to fit (`engine.llm_planner.reserve`), and past it the extractive
    planner plans the rest."""
    max_tokens: int = 384
    """The cap on each reply, so a small model cannot write until its context is full."""
    max_evidence: int = 30
    """How many evidence sentences the prompt lists (fewer is faster on a small local model)."""
    timeout_seconds: float = 60.0
    """The cap on any one request, within `budget_seconds`."""
    role: LLMRole = LLMRole.READER
    """What the model does with `kind = "llm"`: `reader` (the default) names which of the top-rated
    candidates answer, or NONE; `planner` writes the whole plan as JSON; `rewriter` only writes the
    question's variants (see `variants`)."""
    variants: bool = False
    """When an answer's first round verifies nothing, the model rewrites the question twice and the rewrites
    are searched too (always on for `role = "rewriter"`)."""
    reader_candidates: int = 8
    """How many top-rated candidates the reader is shown."""
    none_doubt: float = 0.15
    """A reading whose reply began with NONE at least this probability holds its choice to the declined
    floors (above 1: never; `engine.llm_client.LLMConfig.none_doubt`)."""

    def __post_init__(self) -> None:
        if self.kind is PlannerKind.LLM and not (self.url and self.model):
            raise ConfigError('planner: kind = "llm" needs both url and model')
        for key in ("budget_seconds", "timeout_seconds", "max_tokens", "max_evidence", "reader_candidates"):
            if getattr(self, key) <= 0:
                raise ConfigError(f"planner.{key}: must be greater than 0, got {getattr(self, key)!r}")


_QUEUE = QueueOptions()
"""The queue's own defaults: `[embedding]` spells them out as keys (`daemon.services.queue_options`)."""


@dataclass(frozen=True, slots=True)
class EmbeddingConfig:
    """How the embedder workers drain the backlog and what context a sentence is embedded with; the keys
    that are queue options default to `QueueOptions`' values, declared there once."""

    workers: int = 1
    batch_size: int = _QUEUE.batch_size
    """Backlog rows one worker claims at a time."""
    batch_tokens: int = 0
    """Padded tokens per encoder call (0: the runtime's best): a claim is sorted by token count and cut into
    calls of this size."""
    max_context_tokens: int = _QUEUE.context.max_context_tokens
    """Tokens of heading path and previous sentence at most, so the sentence itself is never cut."""
    max_attempts: int = _QUEUE.max_attempts
    lease_seconds: float = _QUEUE.lease_seconds
    interval_seconds: float = 30.0
    context_heading: bool = _QUEUE.context.heading
    context_previous: PreviousSentence = _QUEUE.context.previous
    """The sentence before is embedded with a sentence `never`, only for a `dependent` one, or `always`."""
    context_previous_sentence: bool | None = None
    """The older switch: true is `always`, false `never`; when set it wins over `context_previous`."""
    separate_process: bool | None = None
    """`watch`/`serve` run the embedder as a child `citeline embed` process instead of threads. Unset: a
    child under `serve` (its model and GIL apart from the API's), threads under `watch`."""
    nice: int = 10
    """With `separate_process`: how much lower the child's CPU priority is (0-19)."""

    def __post_init__(self) -> None:
        if not 0 <= self.nice <= 19:
            raise ConfigError(f"embedding.nice: must be between 0 and 19, got {self.nice}")
        for key in ("workers", "batch_size", "max_attempts"):
            if getattr(self, key) < 1:
                raise ConfigError(f"embedding.{key}: must be at least 1, got {getattr(self, key)}")


@dataclass(frozen=True, slots=True)
class WatchConfig:
    """How file events are batched: a batch closes after `step_ms` of quiet or `max_batch_ms` in all."""

    step_ms: int = 30
    max_batch_ms: int = 1000
    full_scan_threshold: int = 200
    separate_process: bool = True
    """`serve` runs the watcher as a child `citeline watch --no-embed`, apart from the API's threads."""


@dataclass(frozen=True, slots=True)
class ApiConfig:
    """Where the HTTP API listens."""

    host: str = "127.0.0.1"
    port: int = 8750
    keys: tuple[str, ...] = ()
    """Bearer keys, `TOKEN` or `TOKEN:repo1|repo2` (scoped); `CITELINE_API_KEYS` adds more."""
    protect_probes: bool = False
    """Whether /healthz, /readyz and /metrics need a key too (when keys are configured)."""
    allowed_hosts: tuple[str, ...] = ()
    """Host names the API answers besides its bound address (and localhost names when bound to loopback);
    `*` answers any. Names a browser may reach it by; any other Host gets 400 (DNS rebinding)."""


@dataclass(frozen=True, slots=True)
class ThresholdsConfig:
    """Operational limits: the oldest un-embedded sentence's age that warns (the page turns amber) and the
    one that pages (`/readyz` answers 503, the page turns red)."""

    warn_backlog_age_seconds: float = 300.0
    ready_max_backlog_age_seconds: float = 1800.0


@dataclass(frozen=True, slots=True)
class Config:
    """The whole configuration."""

    data_dir: Path = field(default_factory=lambda: default_data_dir())
    database_url: str | None = None
    repositories: tuple[RepositoryConfig, ...] = ()
    indexing: IndexingConfig = field(default_factory=IndexingConfig)
    models: ModelsConfig = field(default_factory=ModelsConfig)
    planner: PlannerConfig = field(default_factory=PlannerConfig)
    embedding: EmbeddingConfig = field(default_factory=EmbeddingConfig)
    watch: WatchConfig = field(default_factory=WatchConfig)
    retrieval: RetrievalConfig = field(default_factory=RetrievalConfig)
    api: ApiConfig = field(default_factory=ApiConfig)
    thresholds: ThresholdsConfig = field(default_factory=ThresholdsConfig)


def default_data_dir(env: Mapping[str, str] | None = None) -> Path:
    """`$XDG_DATA_HOME/citeline`, else `~/.local/share/citeline`."""
    env = os.environ if env is None else env
    base = env.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "citeline"


def _coerce(value: Any, hint: Any, where: str) -> Any:
    """Convert a TOML or environment value to the annotated type, or raise a ConfigError saying where."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        return None if value is None or value == "" else _coerce(value, options[0], where)
    if origin is tuple:
        (item,) = typing.get_args(hint)[:1]
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        if not isinstance(value, list):
            raise ConfigError(f"{where}: expected a list, got {value!r}")
        return tuple(_coerce(v, item, f"{where}[{i}]") for i, v in enumerate(value))
    if hint is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("1", "true", "yes", "on", "0", "false", "no", "off"):
            return value.lower() in ("1", "true", "yes", "on")
        raise ConfigError(f"{where}: expected true or false, got {value!r}")
    if hint in (int, float):
        if isinstance(value, bool):
            raise ConfigError(f"{where}: expected a number, got {value!r}")
        try:
            number = hint(value)
        except (TypeError, ValueError):
            raise ConfigError(
                f"{where}: expected {'an integer' if hint is int else 'a number'}, got {value!r}"
            ) from None
        if number < 0:
            raise ConfigError(f"{where}: must not be negative, got {value!r}")
        return number
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        try:
            return hint(value)
        except ValueError:
            allowed = ", ".join(str(m.value) for m in hint)
            raise ConfigError(f"{where}: expected one of {allowed}, got {value!r}") from None
    if hint is Path:
        if not isinstance(value, str):
            raise ConfigError(f"{where}: expected a path string, got {value!r}")
        return Path(value).expanduser()
    if hint is str:
        if not isinstance(value, str):
            raise ConfigError(f"{where}: expected a string, got {value!r}")
        return value
    raise ConfigError(f"{where}: unsupported setting type {hint!r}")  # pragma: no cover


def _build(cls: type[Any], data: Mapping[str, Any], where: str) -> Any:
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}: expected a table, got {data!r}")
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(names))}")
    values: dict[str, Any] = {}
    for name, value in data.items():
        key_where = f"{where}.{name}" if where else name
        hint = hints[name]
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            values[name] = _build(hint, value, key_where)
        elif name == "repositories":
            if not isinstance(value, list):
                raise ConfigError(f"{key_where}: expected an array of tables ([[repositories]])")
            values[name] = tuple(_repository(v, f"{key_where}[{i}]") for i, v in enumerate(value))
        else:
            values[name] = _coerce(value, hint, key_where)
    return cls(**values)


def _repository(data: Any, where: str) -> RepositoryConfig:
    if not isinstance(data, Mapping) or "path" not in data:
        raise ConfigError(f"{where}: a repository needs at least a path")
    repo: RepositoryConfig = _build(RepositoryConfig, data, where)
    return dataclasses.replace(repo, name=repo.name or repo.path.resolve().name)


def _environment_overrides(env: Mapping[str, str]) -> dict[str, Any]:
    overrides: dict[str, Any] = {}
    if env.get("CITELINE_DATA_DIR"):
        overrides["data_dir"] = env["CITELINE_DATA_DIR"]
    if env.get("CITELINE_DATABASE_URL"):
        overrides["database_url"] = env["CITELINE_DATABASE_URL"]
    for key, value in env.items():
        if key.startswith("CITELINE_") and "__" in key:
            section, _, name = key.removeprefix("CITELINE_").lower().partition("__")
            overrides.setdefault(section, {})[name] = value
    return overrides


def load_config(path: Path | None = None, env: Mapping[str, str] | None = None) -> Config:
    """Read the TOML file (`path`, else `$CITELINE_CONFIG`, else none) and apply environment overrides."""
    env = os.environ if env is None else env
    source = path or (Path(env["CITELINE_CONFIG"]) if env.get("CITELINE_CONFIG") else None)
    data: dict[str, Any] = {}
    label = "configuration"
    if source is not None:
        label = str(source)
        try:
            data = tomllib.loads(source.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"{source}: configuration file not found") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{source}: cannot read: {exc}") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{source}: invalid TOML: {exc}") from None
    data.setdefault("data_dir", str(default_data_dir(env)))
    for key, value in _environment_overrides(env).items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    try:
        return typing.cast(Config, _build(Config, data, ""))
    except ConfigError as exc:
        raise ConfigError(f"{label}: {exc}") from None
