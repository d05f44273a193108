"""Region outages on demand, for a running emulator process: ``--outages FILE`` names the namespaces that are
down, one a line (blank lines and ``#`` comments ignored; no file: none). The file is read again whenever it
changes; a namespace that leaves it serves again, with the state it had. Write it atomically (a temporary file
renamed over it) so a half-written name is never read."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

logger = logging.getLogger(__name__)

POLL_SECONDS = 0.1  # a fault drill measures detection to the second: look often, a stat is cheap


def read_outages(path: Path) -> set[str]:
    """The namespaces the file names (none when there is no file)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return set()
    return {name for line in text.splitlines() if (name := line.split("#", 1)[0].strip())}


class OutageFile:
    """Watches the file on a thread of its own and applies each change through ``set_outage``."""

    def __init__(self, path: Path, set_outage: Callable[[str, bool], None]) -> None:
        self.path = path
        self._set_outage = set_outage
        self._down: set[str] = set()
        self._seen: tuple[int, int] | None = None
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="federator-emulator-outages", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join()

    def _watch(self) -> None:
        while not self._stopping.wait(POLL_SECONDS):
            try:
                self.check()
            except Exception:  # a bad line or a slow namespace must not end the watching
                logger.exception("cannot apply the outages in %s", self.path)

    def check(self) -> None:
        """Apply the file if it changed since the last look."""
        try:
            stat = self.path.stat()
            seen: tuple[int, int] | None = (stat.st_mtime_ns, stat.st_ino)
        except FileNotFoundError:
            seen = None
        if seen == self._seen:
            return
        self._seen = seen
        wanted = read_outages(self.path)
        for namespace in sorted(wanted - self._down):
            self._apply(namespace, True)
        for namespace in sorted(self._down - wanted):
            self._apply(namespace, False)

    def _apply(self, namespace: str, down: bool) -> None:
        try:
            self._set_outage(namespace, down)
        except KeyError as err:
            logger.error("%s: %s", self.path, err.args[0])
            return
        if down:
            self._down.add(namespace)
        else:
            self._down.discard(namespace)
