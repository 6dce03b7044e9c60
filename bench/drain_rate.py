"""Drain rate for 1, 2 and 3 `citeline embed --drain` processes on the same backlog, and where the time goes.

    python bench/drain_rate.py [--sentences 6000] [--workers 1,2,3] [--env KEY=VALUE ...]

A synthetic corpus (`daemon_embed`'s) is indexed once into an embedded PostgreSQL in a temp dir. For each
worker count, every vector is deleted and every sentence re-enqueued, then that many `citeline embed
--drain` processes start at once against the server's URL, as they would on separate hosts. Figures:

- drain /s: vectors written between the first sample that sees a vector and the first that sees them
  all (sampled every 0.1 s), so model loading and process start-up are not counted;
- wall: from the processes' start to the last one's exit;
- CPU, over that same span: the machine's busy share, split into the workers' own CPU time (encoding, in the
  `embed` processes) and the rest (mostly the PostgreSQL backends writing vectors and HNSW entries);
- per vector: worker CPU ms and database CPU ms, from which the N-host projection is reasoned: each host
  brings its own cores to encoding, the database host's cores are shared by all of them.

Prints figures; asserts nothing. Run it on a quiet machine (`flock /tmp/cpu.lock` where that is the rule).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
from daemon_embed import synthetic_index  # bench/ is on sys.path when this runs as a script

from indexer.database import Database


def _reset(database: Database) -> int:
    """Drop every vector and enqueue every sentence again; returns the backlog size."""
    with database.connect() as conn, conn.transaction():
        conn.execute("DELETE FROM sentence_embeddings")
        conn.execute("DELETE FROM embedding_backlog")
        conn.execute("INSERT INTO embedding_backlog (sentence_id) SELECT id FROM sentences")
        row = conn.execute("SELECT count(*) FROM embedding_backlog").fetchone()
    with database.connect() as conn:
        conn.execute("VACUUM ANALYZE sentence_embeddings")
        conn.execute("VACUUM ANALYZE embedding_backlog")
    return int(row[0]) if row else 0


class _Sampler:
    """Vectors written, the workers' CPU seconds and the machine's CPU times, sampled while they drain."""

    def __init__(self, database: Database, processes: list[subprocess.Popen[bytes]]) -> None:
        self._conn = database.connect()
        self._processes = {p.pid: psutil.Process(p.pid) for p in processes}
        self._worker_cpu: dict[int, float] = {}
        self.samples: list[tuple[float, int, float, float, float]] = []

    def sample(self) -> None:
        for pid, process in self._processes.items():
            try:
                times = process.cpu_times()
            except psutil.Error:
                continue  # exited: its last reading stands
            self._worker_cpu[pid] = times.user + times.system
        row = self._conn.execute("SELECT count(*) FROM sentence_embeddings").fetchone()
        machine = psutil.cpu_times()
        idle = machine.idle + machine.iowait
        vectors = int(row[0]) if row else 0
        workers = sum(self._worker_cpu.values())
        self.samples.append((time.perf_counter(), vectors, workers, sum(machine), idle))

    def close(self) -> None:
        self._conn.close()


def _run(database: Database, workers: int, env: dict[str, str], logs: Path) -> dict[str, float]:
    backlog = _reset(database)
    started = time.perf_counter()
    processes = []
    for i in range(workers):
        with (logs / f"w{workers}-{i}.log").open("wb") as log:
            processes.append(
                subprocess.Popen(
                    [sys.executable, "-m", "daemon.cli", "embed", "--drain", "--json"],
                    env=env,
                    stdout=log,
                    stderr=log,
                )
            )
    sampler = _Sampler(database, processes)
    deadline = time.monotonic() + 3600
    while any(p.poll() is None for p in processes) and time.monotonic() < deadline:
        sampler.sample()
        time.sleep(0.1)
    sampler.sample()
    sampler.close()
    if any(p.wait(timeout=60) != 0 for p in processes):
        raise SystemExit(f"a worker failed; see {logs}")
    wall = time.perf_counter() - started
    # The drain proper: from the first sample with a vector to the first with all of them.
    first = next(s for s in sampler.samples if s[1] > 0)
    last = next(s for s in sampler.samples if s[1] >= backlog)
    seconds, vectors = last[0] - first[0], last[1] - first[1]
    machine, idle = last[3] - first[3], last[4] - first[4]
    worker_cpu = last[2] - first[2]
    return {
        "workers": workers,
        "backlog": backlog,
        "vectors": vectors,
        "seconds": seconds,
        "rate": vectors / seconds if seconds else 0.0,
        "wall": wall,
        "busy": (machine - idle) / machine if machine else 0.0,
        "worker_ms": 1000 * worker_cpu / max(vectors, 1),
        "other_ms": 1000 * max(machine - idle - worker_cpu, 0.0) / max(vectors, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--sentences", type=int, default=6000)
    parser.add_argument("--workers", default="1,2,3")
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE for the workers")
    args = parser.parse_args()
    cores = psutil.cpu_count()
    with tempfile.TemporaryDirectory() as tmp:
        database = synthetic_index(Path(tmp), args.sentences)
        env = {k: v for k, v in os.environ.items() if not k.startswith("CITELINE_")}
        env.update(CITELINE_DATABASE_URL=database.url, CITELINE_DATA_DIR=str(Path(tmp) / "workers"))
        env.update(dict(item.split("=", 1) for item in args.env))
        print(f"{cores} cores; settings: {' '.join(args.env) or 'defaults'}")
        header = ("workers", 7), ("vectors", 9), ("drain /s", 10), ("wall s", 8), ("busy", 7)
        print("".join(f"{name:>{width}}" for name, width in header) + f"{'worker ms':>11}{'db ms':>7}")
        results = []
        for workers in (int(w) for w in args.workers.split(",")):
            r = _run(database, workers, env, Path(tmp))
            results.append(r)
            print(
                f"{workers:>7}{r['vectors']:>9.0f}{r['rate']:>10.0f}{r['wall']:>8.1f}{100 * r['busy']:>6.0f}%"
                f"{r['worker_ms']:>11.2f}{r['other_ms']:>7.2f}",
                flush=True,
            )
        print(json.dumps(results))
        _conclude(results, cores)


def _conclude(results: list[dict[str, float]], cores: int) -> None:
    """What limits the drain here, and the projection to N hosts, from the measured per-vector costs: a
    run whose cores are all busy drains at cores / (worker + database CPU a vector); on N hosts each brings
    its own cores to encoding, and the database host's cores are shared by all of them."""
    one = results[0]
    best = max(results, key=lambda r: r["rate"])
    print()
    for r in results:
        ceiling = 1000 * cores / (r["worker_ms"] + r["other_ms"])
        print(
            f"{r['workers']:.0f} worker(s): {r['rate']:.0f}/s measured, cores {100 * r['busy']:.0f}% busy;"
            f" {cores} cores / ({r['worker_ms']:.2f} + {r['other_ms']:.2f}) ms a vector = {ceiling:.0f}/s"
            " if they were all busy"
        )
    print(
        f"What limits it on {cores} cores: CPU. One worker leaves {100 * (1 - one['busy']):.0f}% of the cores"
        " idle (waits on the database, gaps between batches); more workers fill those gaps and then share"
        " the same cores, so"
        f" the best is {best['rate']:.0f}/s ({best['workers']:.0f} workers). Encoding is"
        f" {100 * best['worker_ms'] / (best['worker_ms'] + best['other_ms']):.0f}% of the CPU a vector costs;"
        " PostgreSQL (the write, the HNSW insert) and everything else on the machine the rest."
    )
    per_host = 1000 * cores / best["worker_ms"]
    db_ms = max(r["other_ms"] for r in results)
    database_ceiling = 1000 * cores / db_ms if db_ms else float("inf")
    for hosts in (1, 2, 4, 8):
        print(
            f"{hosts} embedder host(s) like this one ({best['workers']:.0f} workers each), the database on"
            f" its own {cores}-core host: encoding {hosts * per_host:.0f}/s, the database"
            f" {database_ceiling:.0f}/s"
            f" at most ({db_ms:.2f} ms a vector, an upper bound: it counts all other CPU use here):"
            f" about {min(hosts * per_host, database_ceiling):.0f}/s."
        )


if __name__ == "__main__":
    main()
