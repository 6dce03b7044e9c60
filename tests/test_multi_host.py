"""citeline on a shared PostgreSQL it did not start, as a fleet of separate processes reaching the server by
URL with a role and a password: a watcher, three `embed --drain` workers and two API replicas, one worker
and one replica SIGKILLed mid-drain; and migrations started by several processes at once.

Every wait is bounded by a deadline and names what it waited for; nothing asserts on time.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from indexer.schema import available_migrations
from tests.external_postgres import ExternalPostgres, free_port
from tests.fleet_support import (
    Fleet,
    indexed_documents,
    leases_held_by,
    metric,
    scalar,
    search_ids,
    wait_for,
)

FILES = 30
SENTENCES_PER_FILE = 40  # 1,200 sentences in claims of 16: the three workers share many batches


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ExternalPostgres]:
    instance = ExternalPostgres(tmp_path_factory.mktemp("external-postgres"))
    instance.start()
    yield instance
    instance.stop()


def write_docs(root: Path) -> None:
    """Files of distinct, searchable sentences: file `f`'s sentence `s` names module `f` and item `s`."""
    for f in range(FILES):
        lines = [f"# Topic {f}: module{f} reference", "", f"## Settings of module{f}", ""]
        for s in range(SENTENCES_PER_FILE):
            lines += [
                f"The module{f} option item{s} controls setting number {f * 1000 + s} of the build.",
                "",
            ]
        (root / f"module{f}.md").write_text("\n".join(lines), encoding="utf-8")


def still_draining(conn: psycopg.Connection[Any], fleet: Fleet) -> bool:
    """True while a worker can still be caught mid-batch; fails once the backlog is empty or a worker
    failed."""
    if scalar(conn, "SELECT count(*) FROM embedding_backlog") == 0:
        pytest.fail("the backlog drained before a worker was caught mid-batch: give the test more sentences")
    for name, process in fleet.processes.items():
        if name.startswith("worker") and process.poll() not in (None, 0):
            pytest.fail(f"{name} exited with {process.returncode}: {fleet.log(name)}")
    return True


def test_a_fleet_on_a_shared_server_survives_a_killed_worker_and_a_killed_replica(
    server: ExternalPostgres, tmp_path: Path
) -> None:
    url = server.create_database("fleet")
    docs = tmp_path / "docs"
    docs.mkdir()
    write_docs(docs)
    fleet = Fleet(url, tmp_path)
    ports = {name: free_port() for name in ("api-a", "api-b", "api-c")}
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            fleet.start("watcher", "watch", "--no-embed", str(docs))
            for name in ("api-a", "api-b"):
                fleet.start(name, "api", "--host", "127.0.0.1", "--port", str(ports[name]))
            wait_for(
                "the watcher to index every file",
                lambda: fleet.alive("watcher") and indexed_documents(conn) == FILES,
            )
            sentences = scalar(conn, "SELECT count(*) FROM sentences")
            assert sentences >= FILES * SENTENCES_PER_FILE, "every sentence was indexed"
            workers = [fleet.start(f"worker-{i}", "embed", "--drain") for i in range(3)]

            def leaseholder() -> subprocess.Popen[bytes] | None:
                still_draining(conn, fleet)
                return next((w for w in workers if leases_held_by(conn, w.pid, server.port)), None)

            victim = wait_for("an embed worker holding a lease mid-drain", leaseholder)
            victim.send_signal(signal.SIGKILL)
            victim.wait(timeout=60)
            fleet.kill("api-b")

            wait_for("the surviving replica to answer", lambda: fleet.healthy("api-a", ports["api-a"]))
            found = search_ids(ports["api-a"], "module7 option item3 controls setting number 7003")
            assert found, f"the surviving replica answers searches mid-drain: {fleet.log('api-a')}"
            (docs / "late.md").write_text("# Late\n\nThe zebracorn flag arrived while the workers drained.\n")
            wait_for(
                "the surviving replica to find a file written mid-drain",
                lambda: search_ids(ports["api-a"], "zebracorn", lane="lexical"),
            )

            for worker in workers:
                if worker is not victim:
                    status = wait_for("a surviving worker to finish its drain", worker.poll)
                    assert status == 0, f"a surviving worker exited with {status}"
            takeover = subprocess.run(
                [sys.executable, "-m", "daemon.cli", "embed", "--drain", "--json"],
                env=fleet.env("takeover"),
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert takeover.returncode == 0, takeover.stderr[-3000:]
            assert "embedded" in json.loads(takeover.stdout)

            total = scalar(conn, "SELECT count(*) FROM sentences")
            assert total > sentences, "the file written mid-drain joined the index"
            assert scalar(conn, "SELECT count(*) FROM sentence_embeddings") == total, "one vector each"
            unembedded = (
                "SELECT count(*) FROM sentences s LEFT JOIN sentence_embeddings e ON e.sentence_id = s.id"
            )
            assert scalar(conn, unembedded + " WHERE e.sentence_id IS NULL") == 0, "no sentence lacks one"
            assert scalar(conn, "SELECT count(*) FROM embedding_backlog") == 0, "the backlog is empty"

        wait_for(
            "the backlog metrics to return to 0",
            lambda: (
                metric(ports["api-a"], "citeline_backlog_oldest_age_seconds") == 0.0
                and metric(ports["api-a"], "citeline_backlog_size") == 0.0
            ),
        )
        fleet.start("api-c", "api", "--host", "127.0.0.1", "--port", str(ports["api-c"]))
        wait_for("the restarted replica to answer", lambda: fleet.healthy("api-c", ports["api-c"]))
        for query in ("module3 option item12", "which setting does item7 of module21 control", "zebracorn"):
            survivor, restarted = search_ids(ports["api-a"], query), search_ids(ports["api-c"], query)
            assert survivor, f"the survivor finds {query!r}"
            assert survivor == restarted, f"the replicas agree on {query!r}"
    finally:
        fleet.stop_all()


RACER = """
import json, pathlib, sys, time
import psycopg
from indexer.schema import apply_migrations
url, ready, go = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
with psycopg.connect(url, autocommit=True) as conn:
    ready.touch()
    deadline = time.monotonic() + 120
    while not go.exists():
        if time.monotonic() > deadline:
            sys.exit("no start signal")
        time.sleep(0.001)
    print(json.dumps(apply_migrations(conn)))
"""

CATALOG = (
    "SELECT table_name, column_name, data_type, is_nullable, column_default FROM information_schema.columns"
    " WHERE table_schema = 'public' ORDER BY 1, 2",
    "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY 1",
    "SELECT tgname, tgrelid::regclass::text FROM pg_trigger WHERE NOT tgisinternal ORDER BY 1, 2",
    "SELECT proname, pg_get_function_identity_arguments(oid) FROM pg_proc"
    " WHERE pronamespace = 'public'::regnamespace AND prokind = 'f' ORDER BY 1, 2",
    "SELECT version, name FROM citeline_migrations ORDER BY 1",
)


def catalog(url: str) -> list[list[tuple[Any, ...]]]:
    with psycopg.connect(url) as conn:
        return [conn.execute(sql).fetchall() for sql in CATALOG]


def test_processes_migrating_one_fresh_database_at_once_apply_each_migration_once(
    server: ExternalPostgres, tmp_path: Path
) -> None:
    reference = server.create_database("migrated_alone")
    alone = subprocess.run(
        [sys.executable, "-m", "daemon.cli", "migrate"],
        env=Fleet(reference, tmp_path).env("migrate"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert alone.returncode == 0, alone.stderr[-3000:]
    assert alone.stdout.startswith(f"schema at version {available_migrations()[-1].version}:"), alone.stdout
    raced = server.create_database("migrated_at_once")
    go = tmp_path / "go"
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, raced, str(tmp_path / f"ready-{i}"), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(4)
    ]
    wait_for("every racer to connect", lambda: all((tmp_path / f"ready-{i}").exists() for i in range(4)))
    go.touch()
    applied: list[int] = []
    for racer in racers:
        out, err = racer.communicate(timeout=120)
        assert racer.returncode == 0, f"a racing migration failed: {err[-3000:]}"
        applied += json.loads(out)
    versions = [m.version for m in available_migrations()]
    assert sorted(applied) == versions, "each migration was applied by exactly one process"
    assert catalog(raced) == catalog(reference), "the schema is the one `citeline migrate` makes alone"
