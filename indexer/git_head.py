"""The commit a repository's work tree has checked out, read from its `.git` without running git.

Nothing here raises for what a `.git` holds: a `gitdir:` file pointing at a loop or at nothing, a missing
ref, an unreadable file: the answer is then None (no commit is recorded for the files indexed).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["git_head_commit"]


def git_head_commit(root: Path) -> str | None:
    """The commit checked out in the git work tree holding `root`, read from `.git` without running git;
    None when it cannot be read (a `.git` file pointing at a loop or at nothing included)."""
    try:
        return _head_commit(root)
    except (OSError, RuntimeError):  # RuntimeError: Path.resolve's symlink loop on Python 3.11
        return None


def _head_commit(root: Path) -> str | None:
    for candidate in (root, *root.parents):
        git = candidate / ".git"
        if git.is_file():  # a worktree or submodule: "gitdir: <path>"
            content = git.read_text(encoding="utf-8", errors="replace").strip()
            git = (candidate / content.removeprefix("gitdir:").strip()).resolve()
        if git.is_dir():
            return _resolve_head(git)
    return None


def _resolve_head(git_dir: Path) -> str | None:
    try:
        head = (git_dir / "HEAD").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    if not head.startswith("ref:"):
        return head or None
    ref = head.removeprefix("ref:").strip()
    common = git_dir
    commondir = git_dir / "commondir"
    if commondir.is_file():
        common = (git_dir / commondir.read_text(encoding="utf-8").strip()).resolve()
    for base in (git_dir, common):
        try:
            return (base / ref).read_text(encoding="utf-8").strip()
        except OSError:
            pass
    try:
        for line in (common / "packed-refs").read_text(encoding="utf-8").splitlines():
            if line.endswith(" " + ref):
                return line.split(" ", 1)[0]
    except OSError:
        pass
    return None
