"""Each repository's forge link template: read from its git remote (or taken from configuration) when the
repository is opened, kept on its row, and read back by whoever shapes citations.

The template lives in the database, so an API replica that never sees the repository's folder links the same
way as the daemon that indexes it. A configured template wins over the remote; with neither, or a remote whose
forge `indexer.forge` does not know, the row holds NULL and citations carry no link.
"""

from __future__ import annotations

import subprocess
from collections.abc import Collection
from pathlib import Path
from urllib.parse import quote

from indexer.database import Connection
from indexer.forge import template_for_remote

__all__ = ["link_templates", "origin_remote", "record_link_template", "repository_link_template"]


def _git(root: Path, *args: str) -> str | None:
    """What git prints for `args` run in `root` (stripped of the final newline), or None when it fails."""
    try:
        done = subprocess.run(
            ["git", "-c", "safe.directory=*", "-C", str(root), *args],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.rstrip("\n") if done.returncode == 0 else None


def origin_remote(root: Path) -> str | None:
    """The URL of the `origin` remote of the git checkout holding `root` (with `url.*.insteadOf` applied),
    or None when there is none, git is not installed, or git fails."""
    url = (_git(root, "remote", "get-url", "origin") or "").strip()
    return url or None


def repository_link_template(root: Path, configured: str | None) -> str | None:
    """The configured template, else the one derived from the checkout's origin remote, else None.

    Document paths are relative to `root`; when `root` is a folder inside the checkout, its place in the
    checkout is put before `{path}`, so a link names the file as the forge does."""
    template = configured
    if not template:
        remote = origin_remote(root)
        template = template_for_remote(remote) if remote else None
    if not template:
        return None
    prefix = _git(root, "rev-parse", "--show-prefix") or ""
    return template.replace("{path}", quote(prefix, safe="/") + "{path}") if prefix else template


def record_link_template(conn: Connection, repository_id: int, template: str | None) -> None:
    """Keep `template` (None: no link) as the repository's link template."""
    conn.execute(
        "UPDATE repositories SET link_template = %s WHERE id = %s AND link_template IS DISTINCT FROM %s",
        (template, repository_id, template),
    )


def link_templates(conn: Connection, names: Collection[str]) -> dict[str, str]:
    """The link templates of the named repositories that have one, by repository name."""
    if not names:
        return {}
    rows = conn.execute(
        "SELECT name, link_template FROM repositories WHERE name = ANY(%s) AND link_template IS NOT NULL",
        (list(names),),
    ).fetchall()
    return {str(name): str(template) for name, template in rows}
