"""Answers served from the answer store: how many per second, from one thread and from eight.

    PYTHONPATH=TREE python bench/store_serving.py DATA_DIR [--rounds N]

DATA_DIR is a citeline data dir with an index (for example a `bench/api_load.py --workdir` after its run: the
rustc guide at commit 1500 with the embedding backlog it left, about 9,000 sentences); copy it first, since
the answers table is emptied. `bench/api_load.py`'s 12 questions are asked once each (computed, timed), then
the answered ones are asked again `--rounds` times in turn, served from the store: first from one thread,
then from eight sharing the engine's connection pool. Run it with `PYTHONPATH` on two trees over two copies
of one data dir, alternating, to compare commits. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[1]))  # after PYTHONPATH: the tree it names is measured

from api_load import QUERIES  # the load's questions, asked the same way


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("--rounds", type=int, default=400)
    args = parser.parse_args()

    from daemon.assembly import build_engine, model_names
    from daemon.config import load_config
    from engine.search import Filters
    from indexer.database import open_database

    database = open_database(None, args.data_dir)
    config = load_config()
    engine = build_engine(database, model_names(config), config.retrieval)
    with database.connect() as conn:
        conn.execute("DELETE FROM answers")
    answered, computed_ms = [], 0.0
    for question in QUERIES:
        started = time.perf_counter()
        result = engine.answer(question + "?", "low", Filters())
        computed_ms += 1000 * (time.perf_counter() - started)
        if result.status.value == "answer":
            answered.append(question + "?")
    print(f"computed: {len(QUERIES)} questions in {computed_ms:,.0f} ms, {len(answered)} answered")

    def serve(count: int) -> None:
        for n in range(count):
            assert engine.answer(answered[n % len(answered)], "low", Filters()).cached

    for threads in (1, 8):
        started = time.perf_counter()
        workers = [threading.Thread(target=serve, args=(args.rounds // threads,)) for _ in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        rate = (args.rounds // threads) * threads / (time.perf_counter() - started)
        print(f"served from the store, {threads} thread(s): {rate:.1f} answers/s")
    engine.close()


if __name__ == "__main__":
    main()
