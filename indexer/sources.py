"""Finding and reading a repository's Markdown files without trusting them.

Walks skip `.git`, honour every `.gitignore` on the way down, and never follow a symlink out of the
repository. Reading refuses binary content and oversized files, decodes invalid UTF-8 with replacement, and
reports a file that vanished mid-read as gone: each case is a `SkipReason`, logged by the caller, and none of
them touches the index.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from pathspec import GitIgnoreSpec

__all__ = [
    "DEFAULT_INCLUDE",
    "FileFilter",
    "ReadResult",
    "SkipReason",
    "git_head_commit",
    "read_markdown",
    "walk_markdown",
]

DEFAULT_INCLUDE = ("**/*.md", "**/*.markdown")
_BINARY_PROBE = 8192


class SkipReason(enum.Enum):
    """Why a file with a Markdown name was not indexed."""

    TOO_LARGE = "too_large"
    """Larger than the configured size cap."""
    BINARY = "binary"
    """NUL bytes or mostly control characters: not text whatever the extension says."""
    UNREADABLE = "unreadable"
    """The operating system refused to read it (permissions, I/O error)."""
    VANISHED = "vanished"
    """It was listed but gone by the time it was read."""
    OUTSIDE = "outside"
    """A symlink pointing out of the repository."""
    NOT_FILE = "not_file"
    """A directory, socket or other non-regular file."""


@dataclass(frozen=True, slots=True)
class FileFilter:
    """Which paths of a repository are Markdown documents."""

    include: Sequence[str] = DEFAULT_INCLUDE
    exclude: Sequence[str] = ()

    def spec(self) -> tuple[GitIgnoreSpec, GitIgnoreSpec]:
        return (
            GitIgnoreSpec.from_lines(self.include),
            GitIgnoreSpec.from_lines(self.exclude),
        )


@dataclass(frozen=True, slots=True)
class ReadResult:
    """A file's bytes decoded, or why it was skipped."""

    text: str | None
    raw: bytes | None
    size_bytes: int
    mtime_ns: int
    skipped: SkipReason | None = None
    replaced_invalid_utf8: bool = False
    detail: str = ""


def _looks_binary(head: bytes) -> bool:
    if b"\x00" in head:
        return True
    if not head:
        return False
    control = sum(1 for b in head if b < 9 or 13 < b < 32)
    return control / len(head) > 0.1


def read_markdown(path: Path, root: Path, max_bytes: int) -> ReadResult:
    """Read one file under `root` safely; never raises for bad files."""
    try:
        if path.is_symlink():
            target = path.resolve(strict=True)
            if not target.is_relative_to(root.resolve()):
                return ReadResult(None, None, 0, 0, SkipReason.OUTSIDE, detail=str(target))
        stat = path.stat()
        if not path.is_file():
            return ReadResult(None, None, 0, 0, SkipReason.NOT_FILE)
        if stat.st_size > max_bytes:
            return ReadResult(
                None,
                None,
                stat.st_size,
                stat.st_mtime_ns,
                SkipReason.TOO_LARGE,
                detail=f"{stat.st_size} bytes > cap {max_bytes}",
            )
        with path.open("rb") as handle:
            raw = handle.read(max_bytes + 1)
    except FileNotFoundError:
        return ReadResult(None, None, 0, 0, SkipReason.VANISHED)
    except OSError as exc:
        return ReadResult(None, None, 0, 0, SkipReason.UNREADABLE, detail=str(exc))
    if len(raw) > max_bytes:  # it grew between stat and read
        return ReadResult(None, None, len(raw), stat.st_mtime_ns, SkipReason.TOO_LARGE)
    if _looks_binary(raw[:_BINARY_PROBE]):
        return ReadResult(None, None, len(raw), stat.st_mtime_ns, SkipReason.BINARY)
    try:
        text = raw.decode("utf-8")
        replaced = False
    except UnicodeDecodeError:
        text = raw.decode("utf-8", errors="replace")
        replaced = True
    return ReadResult(
        text.removeprefix("\ufeff"), raw, len(raw), stat.st_mtime_ns, replaced_invalid_utf8=replaced
    )


def _gitignore(directory: Path) -> GitIgnoreSpec | None:
    try:
        lines = (directory / ".gitignore").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return GitIgnoreSpec.from_lines(lines)


def walk_markdown(root: Path, file_filter: FileFilter) -> Iterator[str]:
    """Relative POSIX paths of the Markdown files under `root`, in a stable order."""
    include, exclude = file_filter.spec()
    ignores: dict[str, GitIgnoreSpec | None] = {}
    for current, dirs, files in os.walk(root, followlinks=False):
        current_path = Path(current)
        rel_dir = current_path.relative_to(root).as_posix()
        rel_dir = "" if rel_dir == "." else rel_dir
        ignores[rel_dir] = _gitignore(current_path)

        def ignored(rel: str, is_dir: bool, rel_dir: str = rel_dir) -> bool:
            probe = rel + "/" if is_dir else rel
            parts = rel_dir.split("/") if rel_dir else []
            for depth in range(len(parts) + 1):
                base = "/".join(parts[:depth])
                spec = ignores.get(base)
                if spec is not None and spec.match_file(probe[len(base) + 1 :] if base else probe):
                    return True
            return False

        kept = []
        for name in sorted(dirs):
            rel = f"{rel_dir}/{name}" if rel_dir else name
            if name != ".git" and not ignored(rel, True):
                kept.append(name)
        dirs[:] = kept
        for name in sorted(files):
            rel = f"{rel_dir}/{name}" if rel_dir else name
            if include.match_file(rel) and not exclude.match_file(rel) and not ignored(rel, False):
                yield rel


def git_head_commit(root: Path) -> str | None:
    """The commit checked out in the git work tree holding `root`, read from `.git` without running git."""
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
