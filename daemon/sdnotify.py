"""systemd's notify protocol by hand: one datagram per message to `$NOTIFY_SOCKET`, no dependency needed.

Outside systemd (no `NOTIFY_SOCKET`) every call is a no-op, so the daemon code never asks where it runs.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping

__all__ = ["Notifier"]


class Notifier:
    """Sends READY, WATCHDOG, STATUS and STOPPING to the service manager, when there is one."""

    __slots__ = ("_address", "_watchdog_seconds")

    def __init__(self, address: str | None, watchdog_usec: int | None = None) -> None:
        if address and address.startswith("@"):  # abstract namespace socket
            address = "\0" + address[1:]
        self._address = address or None
        self._watchdog_seconds = watchdog_usec / 1_000_000 if watchdog_usec else None

    @classmethod
    def from_environment(cls, env: Mapping[str, str] | None = None) -> Notifier:
        """Read `NOTIFY_SOCKET` and `WATCHDOG_USEC` (ignoring a watchdog meant for another process)."""
        env = os.environ if env is None else env
        usec = env.get("WATCHDOG_USEC", "")
        pid = env.get("WATCHDOG_PID", "")
        mine = not pid or pid == str(os.getpid())
        return cls(env.get("NOTIFY_SOCKET"), int(usec) if usec.isdigit() and mine else None)

    @property
    def enabled(self) -> bool:
        return self._address is not None

    @property
    def watchdog_interval(self) -> float | None:
        """How often to ping: half the watchdog timeout, as systemd recommends; None without a watchdog."""
        return None if self._watchdog_seconds is None else self._watchdog_seconds / 2

    def notify(self, *lines: str) -> bool:
        """Send `KEY=value` lines as one datagram; False when there is no manager or it cannot be reached."""
        if self._address is None:
            return False
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
                sock.sendto("\n".join(lines).encode("utf-8"), self._address)
        except OSError:
            return False
        return True

    def ready(self, status: str) -> bool:
        return self.notify("READY=1", f"STATUS={status}")

    def status(self, status: str) -> bool:
        return self.notify(f"STATUS={status}")

    def watchdog(self) -> bool:
        return self.notify("WATCHDOG=1")

    def stopping(self) -> bool:
        return self.notify("STOPPING=1", "STATUS=stopping")
