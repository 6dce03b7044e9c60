"""The defaults that hold under load: `serve` runs its watcher and embedder as child processes, the embedder
child at a lower priority on every core but one, and the processes that serve the API compute torch on one
thread each; `watch` keeps its embedder in process; the old single process is three settings away.

The daemons are real subprocesses against the session's PostgreSQL, with the tiny model of test_embedder.py.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from daemon.assembly import embed_child_torch_threads, serving_torch_threads
from daemon.config import Config, load_config
from indexer.database import Database
from tests.external_postgres import free_port
from tests.test_embedder import _build_tiny_model
from tests.test_embedder_process import _all_embedded, _wait_until


def _env(database: Database, tmp_path: Path, **settings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CITELINE_")}
    env.update(
        CITELINE_DATABASE_URL=database.url,
        CITELINE_DATA_DIR=str(tmp_path / "data"),
        CITELINE_MODELS__EMBEDDER=str(_build_tiny_model(tmp_path)),
        PYTHONPATH=str(Path(__file__).parents[1]),
    )
    env.update({f"CITELINE_{name}": value for name, value in settings.items()})
    return env


@contextlib.contextmanager
def _daemon(env: dict[str, str], *arguments: str) -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen([sys.executable, "-m", "daemon.cli", *arguments], env=env)
    try:
        yield process
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0, "the daemon stopped cleanly"
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def _citeline_children(daemon: subprocess.Popen[bytes]) -> dict[str, psutil.Process]:
    """The daemon's children running a citeline command, by command line (`embed`, `watch --no-embed`)."""
    assert daemon.poll() is None, "the daemon died"
    found = {}
    parent = psutil.Process(daemon.pid)
    own = parent.cmdline()
    for child in parent.children():
        with contextlib.suppress(psutil.NoSuchProcess):
            line = child.cmdline()
            if "daemon.cli" in line and line != own:  # between fork and exec a child shows the daemon's line
                found[" ".join(line[line.index("daemon.cli") + 1 :])] = child
    return found


def test_unset_torch_threads_is_one_in_serving_processes_and_torch_s_own_elsewhere() -> None:
    assert Config().models.torch_threads is None
    assert serving_torch_threads(None, serving=True) == 1
    assert serving_torch_threads(None, serving=False) == 0
    assert serving_torch_threads(0, serving=True) == 0, "0 keeps torch's default, as before"
    assert serving_torch_threads(4, serving=False) == 4


def test_serve_s_embedder_child_gets_every_core_but_one_unless_threads_are_set() -> None:
    assert embed_child_torch_threads(None) == max(1, (os.cpu_count() or 1) - 1)
    assert embed_child_torch_threads(3) == 3


def test_serve_runs_a_watcher_child_and_a_lower_priority_embedder_child_by_default(
    clean_database: Database, repo_dir: Path, tmp_path: Path
) -> None:
    (repo_dir / "a.md").write_text("# Stage\n\nThe compiler builds a stage.\n")
    env = _env(clean_database, tmp_path)
    with _daemon(env, "serve", str(repo_dir), "--port", str(free_port())) as daemon:
        children: dict[str, psutil.Process] = {}

        def both_started() -> bool:
            children.update(_citeline_children(daemon))
            return len(children) >= 2

        assert _wait_until(both_started, 60), f"serve started two children: {children}"
        assert set(children) == {"embed", f"watch --no-embed {repo_dir}"}, children
        embedder = children["embed"]
        assert embedder.nice() == psutil.Process().nice() + 10
        threads = embedder.environ().get("CITELINE_MODELS__TORCH_THREADS")
        assert threads == str(max(1, (os.cpu_count() or 1) - 1))
        assert _wait_until(lambda: _all_embedded(clean_database), 120), "the children indexed and embedded"


def test_serve_as_one_process_is_three_settings_away(
    clean_database: Database, repo_dir: Path, tmp_path: Path
) -> None:
    (repo_dir / "a.md").write_text("# Stage\n\nThe compiler builds a stage.\n")
    env = _env(
        clean_database,
        tmp_path,
        EMBEDDING__SEPARATE_PROCESS="false",
        WATCH__SEPARATE_PROCESS="false",
        MODELS__TORCH_THREADS="0",
    )
    with _daemon(env, "serve", str(repo_dir), "--port", str(free_port())) as daemon:
        assert _wait_until(lambda: _all_embedded(clean_database), 120), "the one process indexed and embedded"
        assert _citeline_children(daemon) == {}, "no child processes"


def test_watch_keeps_its_embedder_in_process_by_default(
    clean_database: Database, repo_dir: Path, tmp_path: Path
) -> None:
    (repo_dir / "a.md").write_text("# Stage\n\nThe compiler builds a stage.\n")
    with _daemon(_env(clean_database, tmp_path), "watch", str(repo_dir)) as daemon:
        assert _wait_until(lambda: _all_embedded(clean_database), 120), "watch indexed and embedded"
        assert _citeline_children(daemon) == {}, "no child processes"


@pytest.mark.parametrize("value", ["true", "false"])
def test_the_separate_process_settings_still_read_as_booleans(value: str, tmp_path: Path) -> None:
    config_file = tmp_path / "citeline.toml"
    config_file.write_text(f"[embedding]\nseparate_process = {value}\n[watch]\nseparate_process = {value}\n")
    config = load_config(config_file, env={})
    assert config.embedding.separate_process is (value == "true")
    assert config.watch.separate_process is (value == "true")
