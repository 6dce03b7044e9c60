"""Configuration: TOML, environment overrides, validation messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from daemon.assembly import model_names
from daemon.config import ConfigError, PlannerKind, load_config
from indexer.markdown import CodeMode


def test_defaults_without_file(tmp_path: Path) -> None:
    config = load_config(None, env={"XDG_DATA_HOME": str(tmp_path)})
    assert config.data_dir == tmp_path / "citeline"
    assert config.database_url is None
    assert config.repositories == ()
    assert config.api.port == 8750
    assert config.indexing.code_blocks is CodeMode.BLOCK


def test_toml_and_environment(tmp_path: Path) -> None:
    docs = tmp_path / "handbook"
    docs.mkdir()
    path = tmp_path / "citeline.toml"
    path.write_text(
        f"""
data_dir = "{tmp_path / "data"}"
[indexing]
max_file_bytes = 1000
code_blocks = "skip"
[api]
port = 9000
[[repositories]]
path = "{docs}"
exclude = ["drafts/**"]
"""
    )
    env = {"CITELINE_API__PORT": "9100", "CITELINE_DATABASE_URL": "postgresql://x/y"}
    config = load_config(path, env=env)
    assert config.api.port == 9100
    assert config.database_url == "postgresql://x/y"
    assert config.indexing.max_file_bytes == 1000
    assert config.indexing.code_blocks is CodeMode.SKIP
    (repo,) = config.repositories
    assert repo.name == "handbook"
    assert repo.exclude == ("drafts/**",)


def test_config_from_environment_variable(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text("[api]\nhost = '0.0.0.0'\n")
    assert load_config(None, env={"CITELINE_CONFIG": str(path)}).api.host == "0.0.0.0"


@pytest.mark.parametrize(
    ("text", "env", "message"),
    [
        ("[api]\nport = 'abc'\n", {}, "api.port: expected an integer"),
        ("[api]\nprot = 1\n", {}, "api: unknown key(s) prot"),
        ("[indexing]\ncode_blocks = 'fold'\n", {}, "expected one of skip, block"),
        ("[[repositories]]\nname = 'x'\n", {}, "needs at least a path"),
        ("this is = not toml [", {}, "invalid TOML"),
        ("", {"CITELINE_API__PORT": "-1"}, "must not be negative"),
    ],
)
def test_invalid_configuration_names_the_key(
    tmp_path: Path, text: str, env: dict[str, str], message: str
) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path, env=env)
    assert message in str(info.value)
    assert str(path) in str(info.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "nope.toml", env={})


def test_llm_planner_section_reaches_the_engine_settings(tmp_path: Path) -> None:
    path = tmp_path / "citeline.toml"
    path.write_text('[planner]\nkind = "llm"\nurl = "http://localhost:11434/v1"\nmodel = "qwen2.5"\n')
    config = load_config(path, env={"CITELINE_PLANNER__API_KEY": "sk-test"})
    assert config.planner.kind is PlannerKind.LLM
    llm = model_names(config).llm
    assert llm is not None
    assert (llm.url, llm.model, llm.api_key) == ("http://localhost:11434/v1", "qwen2.5", "sk-test")
    assert model_names(load_config(None, env={})).llm is None  # the extractive planner by default


def test_llm_planner_needs_url_and_model(tmp_path: Path) -> None:
    path = tmp_path / "citeline.toml"
    path.write_text('[planner]\nkind = "llm"\nurl = "http://localhost:8000/v1"\n')
    with pytest.raises(ConfigError, match="needs both url and model"):
        load_config(path, env={})
    path.write_text('[planner]\nkind = "oracle"\n')
    with pytest.raises(ConfigError, match=r"planner\.kind"):
        load_config(path, env={})


def test_the_planner_budget_and_reply_cap_reach_the_planner_and_zero_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "citeline.toml"
    path.write_text('[planner]\nkind = "llm"\nurl = "http://h/v1"\nmodel = "m"\nmax_tokens = 99\n')
    llm = model_names(load_config(path, env={"CITELINE_PLANNER__BUDGET_SECONDS": "4.5"})).llm
    assert llm is not None and (llm.budget_seconds, llm.max_tokens, llm.max_evidence) == (4.5, 99, 30)
    with pytest.raises(ConfigError, match=r"planner\.budget_seconds: must be greater than 0"):
        load_config(path, env={"CITELINE_PLANNER__BUDGET_SECONDS": "0"})


def test_the_embedder_runtime_is_validated_and_reaches_the_queue(tmp_path: Path) -> None:
    from daemon.services import queue_options
    from indexer.embedder import EmbedderRuntime
    from indexer.embedding_context import PreviousSentence

    env = {"XDG_DATA_HOME": str(tmp_path)}
    assert load_config(None, env=env).models.embedder_runtime is EmbedderRuntime.AUTO
    forced = load_config(None, env={**env, "CITELINE_MODELS__EMBEDDER_RUNTIME": "torch"})
    assert forced.models.embedder_runtime is EmbedderRuntime.TORCH
    bf16 = load_config(None, env={**env, "CITELINE_MODELS__EMBEDDER_RUNTIME": "torch-bf16"})
    assert bf16.models.embedder_runtime is EmbedderRuntime.TORCH_BF16
    with pytest.raises(
        ConfigError, match=r"models\.embedder_runtime: expected one of auto, onnx-int8, torch, torch-bf16"
    ):
        load_config(None, env={**env, "CITELINE_MODELS__EMBEDDER_RUNTIME": "tensorrt"})
    named = {
        **env,
        "CITELINE_MODELS__EMBEDDER": "some/model",
        "CITELINE_MODELS__EMBEDDER_RUNTIME": "onnx-int8",
    }
    with pytest.raises(ConfigError, match="runs only the shipped embedder"):
        load_config(None, env=named)
    docs = load_config(None, env={**named, "CITELINE_MODELS__EMBEDDER": "citeline-docs"})
    assert docs.models.embedder == "citeline-docs"
    older = load_config(None, env={**env, "CITELINE_EMBEDDING__CONTEXT_PREVIOUS_SENTENCE": "true"})
    assert queue_options(older).context.previous is PreviousSentence.ALWAYS
    assert queue_options(load_config(None, env=env)).context.previous is PreviousSentence.DEPENDENT


def test_an_empty_embedder_setting_loads_the_docs_embedder_and_the_base_model_stays_by_name(
    tmp_path: Path,
) -> None:
    from daemon.assembly import load_embedder
    from indexer.runtimes import DEFAULT_MODEL_NAME, DOCS_MODEL_NAME

    env = {"XDG_DATA_HOME": str(tmp_path), "CITELINE_MODELS__EMBEDDER_RUNTIME": "onnx-int8"}
    shipped = load_embedder(load_config(None, env=env))
    assert shipped.name == f"{DOCS_MODEL_NAME} (onnx-int8)"
    base = load_embedder(load_config(None, env={**env, "CITELINE_MODELS__EMBEDDER": "all-MiniLM-L6-v2"}))
    assert base.name.startswith(DEFAULT_MODEL_NAME) and base.name != shipped.name
