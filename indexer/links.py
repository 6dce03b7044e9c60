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

from indexer.database import Connection
from indexer.forge import template_for_remote

__all__ = ["link_templates", "origin_remote", "record_link_template", "repository_link_template"]


def origin_remote(root: Path) -> str | None:
    """The URL of the `origin` remote of the git checkout holding `root` (with `url.*.insteadOf` applied),
    or None when there is none, git is not installed, or git fails."""
    try:
        done = subprocess.run(
            ["git", "-c", "safe.directory=*", "-C", str(root), "remote", "get-url", "origin"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    url = done.stdout.strip()
    return url if done.returncode == 0 and url else None


def repository_link_template(root: Path, configured: str | None) -> str | None:
    """The configured template, else the one derived from the checkout's origin remote, else None."""
    if configured:
        return configured
    remote = origin_remote(root)
    return template_for_remote(remote) if remote else None


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
