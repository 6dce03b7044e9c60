"""Permalinks to a forge: a link template from a git remote URL, checked templates, and the link itself.

Pure functions, no I/O. A template is a URL with the placeholders `{commit}`, `{path}`, `{start}` and `{end}`,
for example `https://github.com/o/r/blob/{commit}/{path}#L{start}-L{end}`. `template_for_remote` derives one
only for a host whose forge is known by its name (github.com, gitlab.com, codeberg.org, gitea.com,
bitbucket.org, and hosts named gitlab.*, gitea.* or forgejo.*): any other host, a local path or a malformed
remote gets None, never a guess, and never an exception. Credentials in a remote never reach a template.
"""

from __future__ import annotations

import re
import string
from urllib.parse import quote, urlsplit

__all__ = ["PLACEHOLDERS", "LinkTemplateError", "check_template", "permalink", "template_for_remote"]

PLACEHOLDERS = frozenset({"commit", "path", "start", "end"})
"""The names a link template may use; `commit` and `path` are required."""


class LinkTemplateError(ValueError):
    """A configured link template is unusable; the message says why."""


_GITHUB = "{base}/blob/{{commit}}/{{path}}#L{{start}}-L{{end}}"
_GITLAB = "{base}/-/blob/{{commit}}/{{path}}#L{{start}}-{{end}}"
_GITEA = "{base}/src/commit/{{commit}}/{{path}}#L{{start}}-L{{end}}"
_BITBUCKET = "{base}/src/{{commit}}/{{path}}#lines-{{start}}:{{end}}"

_KNOWN_HOSTS = {
    "github.com": _GITHUB,
    "gitlab.com": _GITLAB,
    "codeberg.org": _GITEA,
    "gitea.com": _GITEA,
    "bitbucket.org": _BITBUCKET,
}
_HOST_PREFIXES = (("gitlab.", _GITLAB), ("gitea.", _GITEA), ("forgejo.", _GITEA))
_SSH_ALIASES = {
    "ssh.github.com": "github.com",
    "altssh.gitlab.com": "gitlab.com",
    "altssh.bitbucket.org": "bitbucket.org",
}
"""SSH-over-443 host names of the hosted forges, and the web host each stands for."""
_TWO_SEGMENTS = {_GITHUB, _BITBUCKET, _GITEA}
"""Forges whose repositories are exactly `owner/name`; GitLab nests groups, so it takes two or more."""

_SEGMENT = re.compile(r"^[A-Za-z0-9_.~-]+$")
_HOST = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+$")
_SCP = re.compile(r"^(?:[^@/:\s]+@)?(?P<host>[^@/:\s]+):(?P<path>[^\s]*)$")
_COMMIT = re.compile(r"^[0-9a-f]{7,64}$")


def _forge(host: str) -> str | None:
    if host in _KNOWN_HOSTS:
        return _KNOWN_HOSTS[host]
    for prefix, template in _HOST_PREFIXES:
        if host.startswith(prefix):
            return template
    return None


def _split(remote: str) -> tuple[str, str, str] | None:
    """(web scheme, host[:port], repository path) of a remote, or None when it is not a network remote."""
    if "://" not in remote:
        match = _SCP.match(remote)
        if match is None or len(match["host"]) < 2:  # `C:\docs` is a Windows path, not a host
            return None
        return "https", match["host"].lower(), match["path"]
    try:
        parts = urlsplit(remote)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if scheme in ("http", "https"):
        return scheme, host if port is None else f"{host}:{port}", parts.path
    if scheme in ("ssh", "git+ssh", "ssh+git", "git"):
        return "https", host, parts.path  # an SSH or git port says nothing about the web server's
    return None


def template_for_remote(remote: str) -> str | None:
    """The link template of a git remote URL (SSH `git@host:owner/repo.git`, `ssh://`, `git://`, HTTPS), or
    None when the host's forge is not known by name, the remote is local, or it is malformed."""
    split = _split(remote.strip())
    if split is None:
        return None
    scheme, netloc, raw_path = split
    host, _, port = netloc.partition(":")
    host = _SSH_ALIASES.get(host, host)
    if not _HOST.match(host) or (port and not port.isdigit()):
        return None
    forge = _forge(host)
    if forge is None:
        return None
    path = raw_path.strip("/").removesuffix(".git").removesuffix("/")
    segments = path.split("/") if path else []
    if len(segments) < 2 or (forge in _TWO_SEGMENTS and len(segments) != 2):
        return None
    if any(not _SEGMENT.match(s) or s in (".", "..") for s in segments):
        return None
    base = f"{scheme}://{host}{':' + port if port else ''}/{'/'.join(segments)}"
    return forge.format(base=base)


def check_template(template: str) -> str:
    """`template` itself when it is an http(s) URL using only the known placeholders, `{commit}` and
    `{path}` among them; otherwise a `LinkTemplateError` saying what is wrong."""
    text = template.strip()
    if not text.startswith(("https://", "http://")):
        raise LinkTemplateError(f"a link template must start with https:// or http://, got {template!r}")
    try:
        names = {field for _, field, _, _ in string.Formatter().parse(text) if field is not None}
    except ValueError as exc:
        raise LinkTemplateError(f"malformed link template {template!r}: {exc}") from None
    unknown = sorted(names - PLACEHOLDERS)
    if unknown:
        known = ", ".join("{" + p + "}" for p in sorted(PLACEHOLDERS))
        raise LinkTemplateError(
            f"unknown placeholder(s) {', '.join(unknown)} in {template!r}; known: {known}"
        )
    missing = sorted({"commit", "path"} - names)
    if missing:
        raise LinkTemplateError(f"a link template needs {', '.join('{' + m + '}' for m in missing)}")
    return text


def permalink(
    template: str | None, commit: str | None, path: str, line_start: int, line_end: int
) -> str | None:
    """The link to `path` at `commit`, lines `line_start`-`line_end`; None without a template or a commit
    (a folder that is not a git checkout), or when the commit is not a hexadecimal object name."""
    if not template or not commit or not _COMMIT.match(commit):
        return None
    try:
        return template.format(
            commit=commit, path=quote(path, safe="/"), start=int(line_start), end=int(line_end)
        )
    except (KeyError, IndexError, ValueError):
        return None
