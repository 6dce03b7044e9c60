"""Bearer keys: who is calling and which repositories they may read.

The guard runs before every handler. With no keys configured everything is open (a loopback-only default).
With keys, every route needs one except the probes (`/healthz`, `/readyz`) and the static page, unless
`protect_probes` closes the probes too. An open probe called without a valid key reads as `ANONYMOUS`, which
may read no repository: the probe then says whether it is ready and why in general terms, naming nothing.
`/metrics` is not a probe: it names repositories, so it needs a key and shows a scoped key only its
repositories' series. Tokens are compared with `hmac.compare_digest`
against every configured key, without stopping at the first match, so timing says nothing about which
prefix matched.

A key teaches (accepts sentences for everyone through feedback) only when it has the `teach` property; any
key may still say whether an answer helped.

The resolved `Access` travels in the request state; handlers pass its repositories down to every query,
which filters in SQL (`indexer.browse`, the retriever's filters, `repository_status(names=...)`).
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass

from litestar.connection import ASGIConnection
from litestar.exceptions import NotAuthorizedException, PermissionDeniedException
from litestar.handlers.base import BaseRouteHandler

from api.settings import ApiKey

__all__ = ["ANONYMOUS", "PROBE", "PUBLIC", "Access", "KeyGuard", "access_of"]

PUBLIC = "public"
"""Handler opt flag: never needs a key (the static page: it holds no data)."""
PROBE = "probe"
"""Handler opt flag: needs a key only when probes are protected."""


@dataclass(frozen=True, slots=True)
class Access:
    """What the caller may read: `repositories` None means every repository. `may_teach`: whether it may
    accept sentences as answering a question for everyone (`engine.feedback`): true with no keys
    configured, else only for a key with the `teach` property (`api.settings.parse_keys`)."""

    repositories: tuple[str, ...] | None
    may_teach: bool = True

    @property
    def scoped(self) -> bool:
        """Whether the caller is limited to some repositories."""
        return self.repositories is not None

    def restrict(self, requested: tuple[str, ...] | None) -> tuple[str, ...] | None:
        """The repositories a query may touch: the requested ones, checked against the scope.

        Asking for nothing means the whole scope; asking for a repository outside it is refused (403)
        rather than silently dropped, so a client learns its key is wrong instead of seeing empty results;
        the refusal names the key's own repositories, and the same refusal answers a name that is indexed and
        one that is not, so a key learns nothing of other repositories.
        """
        if self.repositories is None:
            return tuple(sorted(set(requested))) if requested else None
        if not requested:
            return self.repositories
        outside = sorted(set(requested) - set(self.repositories))
        if outside:
            readable = ", ".join(self.repositories) or "none"
            raise PermissionDeniedException(
                f"this key may not read repository {', '.join(outside)}; it may read: {readable}"
            )
        return tuple(sorted(set(requested)))


_EVERYTHING = Access(None)
ANONYMOUS = Access((), may_teach=False)
"""A caller of an open probe with no valid key, when keys are configured: reads no repository."""


class KeyGuard:
    """A Litestar guard resolving the bearer token to an `Access` stored in `connection.state.access`."""

    __slots__ = ("_keys", "_protect_probes")

    def __init__(self, keys: tuple[ApiKey, ...], protect_probes: bool) -> None:
        self._keys = keys
        self._protect_probes = protect_probes

    def __call__(self, connection: ASGIConnection, handler: BaseRouteHandler) -> None:  # type: ignore[type-arg]
        if not self._keys or handler.opt.get(PUBLIC):
            connection.state.access = _EVERYTHING
            return
        if handler.opt.get(PROBE) and not self._protect_probes:
            try:  # an open probe never refuses; a valid key only widens what it may name
                connection.state.access = self._resolve(connection.headers.get("authorization"))
            except NotAuthorizedException:
                connection.state.access = ANONYMOUS
            return
        connection.state.access = self._resolve(connection.headers.get("authorization"))

    def _resolve(self, header: str | None) -> Access:
        scheme, _, token = (header or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise NotAuthorizedException(
                "a bearer API key is required", headers={"WWW-Authenticate": 'Bearer realm="citeline"'}
            )
        presented = token.strip().encode()
        found: ApiKey | None = None
        for key in self._keys:
            if hmac.compare_digest(presented, key.token.encode()) and found is None:
                found = key
        if found is None:
            raise NotAuthorizedException(
                "unknown API key",
                headers={"WWW-Authenticate": 'Bearer realm="citeline", error="invalid_token"'},
            )
        return Access(found.repositories, may_teach=found.teach)


def access_of(connection: ASGIConnection) -> Access:  # type: ignore[type-arg]
    """The caller's access as the guard resolved it."""
    access = connection.state.get("access")
    if not isinstance(access, Access):  # fail closed: a route the guard did not see reads nothing
        raise NotAuthorizedException("no access resolved for this request")
    return access
