"""A TCP proxy in front of an emulator namespace's AMQP port whose answers come late: every byte the
broker sends reaches the client ``delay`` seconds after the broker sent it (the client's bytes go straight
through), as from a host too loaded to answer in time. Changing ``delay`` affects what the broker sends
from then on; each direction keeps its order."""

from __future__ import annotations

import contextlib
import queue
import re
import socket
import threading
import time

_CHUNK = 65536
_ENDPOINT = re.compile(r"(sb://[^:/;]+):(\d+)")


def amqp_port(connection_string: str) -> int:
    """The AMQP port of an emulator namespace's connection string."""
    found = _ENDPOINT.search(connection_string)
    assert found is not None, "the connection string names no sb://host:port"
    return int(found.group(2))


def with_amqp_port(connection_string: str, port: int) -> str:
    return _ENDPOINT.sub(rf"\g<1>:{port}", connection_string)


class LateAnswers:
    """``connection_string``: the namespace's, through the proxy."""

    def __init__(self, connection_string: str, delay: float) -> None:
        self.delay = delay
        self.target = ("127.0.0.1", amqp_port(connection_string))
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.connection_string = with_amqp_port(connection_string, self.listener.getsockname()[1])
        self.sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, name="late-answers", daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
                upstream = socket.create_connection(self.target)
            except OSError:
                return
            with self._lock:
                self.sockets += [client, upstream]
            late: queue.Queue[tuple[float, bytes]] = queue.Queue()
            for target, args in (
                (self._pump, (client, upstream)),
                (self._read_answers, (upstream, late)),
                (self._deliver_answers, (late, client)),
            ):
                threading.Thread(target=target, args=args, daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(_CHUNK):
                sink.sendall(data)
            sink.shutdown(socket.SHUT_WR)  # the client went: so does the broker's side

    def _read_answers(self, broker: socket.socket, late: queue.Queue[tuple[float, bytes]]) -> None:
        with contextlib.suppress(OSError):
            while data := broker.recv(_CHUNK):
                late.put((time.monotonic() + self.delay, data))
        late.put((0.0, b""))

    @staticmethod
    def _deliver_answers(late: queue.Queue[tuple[float, bytes]], client: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while (answer := late.get())[1]:
                due, data = answer
                time.sleep(max(0.0, due - time.monotonic()))
                client.sendall(data)
            client.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        self.listener.close()
        with self._lock:
            for held in self.sockets:
                with contextlib.suppress(OSError):
                    held.close()
