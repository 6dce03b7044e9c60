"""Which repositories a command works on: paths given on the command line, else the configured ones."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from daemon.config import Config, ConfigError
from indexer.reconcile import Repository
from indexer.sources import FileFilter

__all__ = ["repositories_for"]


def repositories_for(config: Config, paths: Sequence[Path]) -> list[Repository]:
    """Resolve `paths` against the configuration: a configured repository keeps its name and globs."""
    configured = {rc.path.resolve(): rc for rc in config.repositories}
    if not paths:
        if not configured:
            raise ConfigError("no repositories configured; pass a folder, e.g. `citeline index ./docs`")
        paths = list(configured)
    repos = []
    for path in paths:
        root = path.resolve()
        if not root.is_dir():
            raise ConfigError(f"{path}: not a folder")
        rc = configured.get(root)
        if rc is not None:
            link = rc.link.strip() or None
            repos.append(Repository(rc.name, root, FileFilter(rc.include, rc.exclude), link))
        else:
            repos.append(Repository(root.name, root))
    return repos
