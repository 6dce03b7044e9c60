"""Finding and reading a repository's Markdown files without trusting them.

Walks skip `.git`, honour every `.gitignore` on the way down, and never follow a symlink out of the
repository. A folder the walk cannot list and a name that is not UTF-8 are reported in `WalkProblems`, never
silently dropped: a listing that failed must not read as files that were deleted. Reading refuses binary
content and oversized files, decodes invalid UTF-8 with replacement (U+FFFD, flagged for a warning), and
reports a file that vanished mid-read as gone: each case is a `SkipReason`, logged by the caller, and none of
them touches the index. Nothing a file is (a symlink loop, a chain of links too long to follow, a link out of
the repository) makes a read raise, and a skip's detail never names a path outside the repository.

A hard link is a second name of the same file, not a pointer: nothing in a repository tells where else the
file is linked from, so a hard-linked file is read and indexed like any other (docs/security.md).
"""

from __future__ import annotations

import enum
import errno
import os
import stat as stat_mode
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pathspec import GitIgnoreSpec

__all__ = [
    "DEFAULT_INCLUDE",
    "DocumentMatcher",
    "FileFilter",
    "PathState",
    "ReadResult",
    "SkipReason",
    "WalkProblems",
    "display_path",
    "is_undecodable",
    "path_state",
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
    """A symlink pointing out of the repository (its detail says so without naming the target)."""
    LINK_LOOP = "link_loop"
    """A symlink that loops back on itself, or a chain of links longer than the operating system follows."""
    NOT_FILE = "not_file"
    """A directory, socket or other non-regular file."""
    REJECTED = "rejected"
    """The database refused the document's rows (a data error or a size limit); nothing of it was written."""
    UNDECODABLE_NAME = "undecodable_name"
    """The file name is not UTF-8, so it cannot be stored, searched or cited as a path."""
    FOLDER_UNREADABLE = "folder_unreadable"
    """The folder holding the file could not be listed: the file may still be there, so its document stays."""


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


class PathState(enum.Enum):
    """What `lstat` says about a path, keeping "cannot tell" apart from "not there"."""

    FILE = "file"
    """A regular file or a symlink (reading decides what it points to)."""
    OTHER = "other"
    """A directory, socket or other non-regular file."""
    ABSENT = "absent"
    """Nothing at that path."""
    UNKNOWN = "unknown"
    """The operating system refused to say (a permission error or an I/O error on the way)."""


def path_state(path: Path) -> PathState:
    """Whether `path` exists, without mistaking a refused `lstat` for a deleted file."""
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return PathState.ABSENT
    except OSError:
        return PathState.UNKNOWN
    return PathState.FILE if stat_mode.S_ISREG(mode) or stat_mode.S_ISLNK(mode) else PathState.OTHER


def is_undecodable(name: str) -> bool:
    """Whether a name from the file system carries bytes that are not UTF-8 (held as lone surrogates)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def display_path(name: str) -> str:
    """A name as it can be logged and stored: bytes that are not UTF-8 written as `\\xff` escapes."""
    return os.fsencode(name).decode("utf-8", errors="backslashreplace")


@dataclass(slots=True)
class WalkProblems:
    """What a walk could not look at; the caller warns about each and keeps the documents they hold."""

    unreadable_folders: dict[str, str] = field(default_factory=dict)
    """Repository-relative folder ("" for the root) to the operating system's refusal."""
    undecodable: list[str] = field(default_factory=list)
    """Names that are not UTF-8, as `display_path` writes them; skipped, with everything under them."""

    def hiding(self, rel: str) -> str | None:
        """The innermost folder the walk could not list holding `rel` (whose absence then proves nothing)."""
        holders = [f for f in self.unreadable_folders if f == "" or rel.startswith(f + "/")]
        return max(holders, key=len) if holders else None


def _looks_binary(head: bytes) -> bool:
    if b"\x00" in head:
        return True
    if not head:
        return False
    control = sum(1 for b in head if b < 9 or 13 < b < 32)
    return control / len(head) > 0.1


_OUTSIDE_DETAIL = "links outside the repository"
_LOOP_DETAIL = "symlink loop or too many levels of links"


def _link_skip(path: Path, root: Path) -> ReadResult | None:
    """Why a symlink at `path` is not read (a loop or a target out of `root`), or None to read it.

    `Path.resolve(strict=True)` raises RuntimeError for a loop on Python 3.11 and OSError(ELOOP) on 3.13:
    both are a skip here, never an exception for the caller.
    """
    try:
        target = path.resolve(strict=True)
    except RuntimeError:
        return ReadResult(None, None, 0, 0, SkipReason.LINK_LOOP, detail=_LOOP_DETAIL)
    if not target.is_relative_to(root.resolve()):
        return ReadResult(None, None, 0, 0, SkipReason.OUTSIDE, detail=_OUTSIDE_DETAIL)
    return None


def _opened_outside(fd: int, root: Path) -> bool:
    """Whether the file open as `fd` lies outside `root`, as the kernel names it (Linux's `/proc/self/fd`);
    where there is no such name, False: the checks before opening are all there is."""
    try:
        opened = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return False
    return not Path(opened).is_relative_to(root.resolve())


def read_markdown(path: Path, root: Path, max_bytes: int) -> ReadResult:
    """Read one file under `root` safely; never raises for bad files."""
    try:
        if path.is_symlink() and (skip := _link_skip(path, root)) is not None:
            return skip
        stat = path.stat()
        if not stat_mode.S_ISREG(stat.st_mode):
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
        # Non-blocking, and checked again once open: a file swapped for a FIFO after the stat cannot hang us.
        with os.fdopen(os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC), "rb") as handle:
            if not stat_mode.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return ReadResult(None, None, 0, 0, SkipReason.NOT_FILE)
            if _opened_outside(handle.fileno(), root):  # a link swapped in after the checks above
                return ReadResult(None, None, 0, 0, SkipReason.OUTSIDE, detail=_OUTSIDE_DETAIL)
            raw = handle.read(max_bytes + 1)
    except FileNotFoundError:
        return ReadResult(None, None, 0, 0, SkipReason.VANISHED)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return ReadResult(None, None, 0, 0, SkipReason.LINK_LOOP, detail=_LOOP_DETAIL)
        return ReadResult(None, None, 0, 0, SkipReason.UNREADABLE, detail=exc.strerror or type(exc).__name__)
    if len(raw) > max_bytes:  # it grew between stat and read
        return ReadResult(None, None, len(raw), stat.st_mtime_ns, SkipReason.TOO_LARGE)
    if _looks_binary(raw[:_BINARY_PROBE]):
        return ReadResult(None, None, len(raw), stat.st_mtime_ns, SkipReason.BINARY)
    try:
        text = raw.decode("utf-8")
        replaced, detail = False, ""
    except UnicodeDecodeError as exc:
        text = raw.decode("utf-8", errors="replace")
        replaced, detail = True, f"invalid UTF-8 from byte {exc.start}, read as U+FFFD"
    return ReadResult(
        text.removeprefix("\ufeff"),
        raw,
        len(raw),
        stat.st_mtime_ns,
        replaced_invalid_utf8=replaced,
        detail=detail,
    )


class DocumentMatcher:
    """Whether a path is a document of the repository: the one rule `walk_markdown` and single paths share.

    Include and exclude globs, every `.gitignore` from the root down (each read once, when first needed),
    no `.git` folder and no symlinked folder on the way: a file the walk would not list is not indexed
    because it was edited.
    """

    __slots__ = ("_exclude", "_ignores", "_include", "_root")

    def __init__(self, root: Path, file_filter: FileFilter) -> None:
        self._root = root
        self._include, self._exclude = file_filter.spec()
        self._ignores: dict[str, GitIgnoreSpec | None] = {}

    def _ignore_spec(self, base: str) -> GitIgnoreSpec | None:
        if base not in self._ignores:
            try:
                text = (self._root / base / ".gitignore").read_text(encoding="utf-8", errors="replace")
                self._ignores[base] = GitIgnoreSpec.from_lines(text.splitlines())
            except OSError:
                self._ignores[base] = None
        return self._ignores[base]

    def _ignored(self, rel: str, is_dir: bool) -> bool:
        parts = rel.split("/")
        probe = rel + "/" if is_dir else rel
        for depth in range(len(parts)):
            base = "/".join(parts[:depth])
            spec = self._ignore_spec(base)
            if spec is not None and spec.match_file(probe[len(base) + 1 :] if base else probe):
                return True
        return False

    def listed(self, rel: str, is_dir: bool) -> bool:
        """Whether the walk, once in the folder holding `rel`, enters it (a folder) or yields it (a file)."""
        if is_dir:
            return rel.rsplit("/", 1)[-1] != ".git" and not self._ignored(rel, True)
        matched = self._include.match_file(rel) and not self._exclude.match_file(rel)
        return matched and not self._ignored(rel, False)

    def matches(self, rel: str) -> bool:
        """Whether the walk would yield the file `rel`: every folder above it entered, the file kept."""
        parts = rel.split("/")
        for depth in range(1, len(parts)):
            folder = "/".join(parts[:depth])
            if not self.listed(folder, True) or (self._root / folder).is_symlink():
                return False
        return self.listed(rel, False)


def walk_markdown(root: Path, file_filter: FileFilter, problems: WalkProblems | None = None) -> Iterator[str]:
    """Relative POSIX paths of the Markdown files under `root`, in a stable order.

    Folders that cannot be listed and names that are not UTF-8 are left out of the paths and noted in
    `problems` (when given); a caller that deletes documents of unlisted files must spare those folders.
    """
    matcher = DocumentMatcher(root, file_filter)
    problems = problems if problems is not None else WalkProblems()

    def refused(exc: OSError) -> None:
        folder = Path(exc.filename or root).relative_to(root).as_posix()
        problems.unreadable_folders["" if folder == "." else folder] = exc.strerror or str(exc)

    for current, dirs, files in os.walk(root, onerror=refused, followlinks=False):
        rel_dir = Path(current).relative_to(root).as_posix()
        prefix = "" if rel_dir == "." else rel_dir + "/"
        kept = []
        for name in sorted(dirs):
            if matcher.listed(prefix + name, True):
                if is_undecodable(name):
                    problems.undecodable.append(display_path(prefix + name) + "/")
                else:
                    kept.append(name)
        dirs[:] = kept
        for name in sorted(files):
            if matcher.listed(prefix + name, False):
                if is_undecodable(name):
                    problems.undecodable.append(display_path(prefix + name))
                else:
                    yield prefix + name
