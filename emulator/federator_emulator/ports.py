"""A namespace's port kept while the namespace is down: bound but not listening, so a client's connection
is refused (as an outage looks to it) and no other process is handed the port meanwhile. The emulator's
ports are the kernel's ephemeral ones: a port let go during an outage could go to any new connection, and
the namespace could not come back on it."""

from __future__ import annotations

import socket


def hold(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # its connections may be in TIME_WAIT
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock
