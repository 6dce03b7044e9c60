"""Where the index is: what `ask`, `search` and `status` say when the data dir they read holds none.

A second terminal without the first one's `CITELINE_DATA_DIR` reads the default data dir. Rather than start
an empty embedded database there and answer "insufficient" after loading every model, a lookup refuses
(exit status 2) with a message that names the data dir it read, says how to point it elsewhere, and names the
data dir of each `citeline serve` running for this user (`daemon.instance.other_servers`). Only `index`,
`watch`, `serve`, `api` and `migrate` create a database.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from daemon.config import Config
from daemon.instance import other_servers

if TYPE_CHECKING:
    from indexer.database import Database

__all__ = ["has_documents", "no_database", "no_index_message"]


def no_database(config: Config) -> bool:
    """Whether the configured database is the embedded one and the data dir holds none yet."""
    return config.database_url is None and not (config.data_dir / "pgdata" / "PG_VERSION").is_file()


def has_documents(database: Database) -> bool:
    """Whether any document is indexed in `database`."""
    with database.connect() as conn:
        row = conn.execute("SELECT EXISTS (SELECT 1 FROM documents)").fetchone()
    return bool(row and row[0])


def no_index_message(config: Config, database: Database | None = None) -> str:
    """Why there is nothing to look in, and where to look instead: the data dir read (or, for a configured
    database URL, the database), how to point elsewhere, and every running server with another data dir."""
    if database is None:
        said = f"the data dir {config.data_dir} holds no index yet (no database there)"
    elif config.database_url is None:
        said = f"the index in the data dir {config.data_dir} holds no documents"
    else:
        said = f"the database {database.describe()} holds no documents"
    lines = [
        f"{said}. Index a folder first (`citeline index PATH`, or `citeline serve PATH`), or point at"
        " the data dir of an existing index with CITELINE_DATA_DIR=DIR or --config FILE."
    ]
    for server in other_servers(config.data_dir):
        lines.append(
            f"  A citeline server is running at {server.url} with the data dir {server.data_dir}:"
            f" run with CITELINE_DATA_DIR={server.data_dir}"
        )
    return "\n".join(lines)
