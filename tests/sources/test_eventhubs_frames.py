"""Frames cut from socket chunks (``sources/eventhubs_frames.py``) are what the SDK's own transport
read would return: whole frames in order, however the bytes arrive, a partial frame kept across a
socket timeout, and a closed connection reported as the SDK reports it."""

from __future__ import annotations

import io
import socket
import struct
import threading
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from azure.eventhub._pyamqp._decode import decode_frame
from azure.eventhub._pyamqp._encode import encode_frame
from azure.eventhub._pyamqp.performatives import FlowFrame, TransferFrame

from federator_spark.sources import eventhubs_frames
from federator_spark.sources.eventhubs_frames import ChunkedFrames


def frame(channel: int, performative: Any) -> bytes:
    header, body = encode_frame(performative)
    return header + struct.pack(">H", channel) + body


def transfer(channel: int, delivery_id: int, payload: bytes) -> bytes:
    return frame(channel, TransferFrame(handle=0, delivery_id=delivery_id, payload=payload))


def read_frame(transport: Any) -> tuple[memoryview, int, memoryview | None]:
    """As the SDK reads: a socket timeout means "nothing yet", read again."""
    deadline = time.monotonic() + 10
    while True:
        try:
            return transport.read()  # type: ignore[no-any-return]
        except TimeoutError:
            if time.monotonic() > deadline:
                raise


def send_all(peer: socket.socket, pieces: list[bytes]) -> None:
    for piece in pieces:
        peer.sendall(piece)


@pytest.fixture
def connected() -> Iterator[tuple[Any, socket.socket]]:
    ours, peer = socket.socketpair()
    ours.settimeout(0.05)
    transport = SimpleNamespace(
        sock=ours, socket_lock=threading.Lock(), _read_buffer=io.BytesIO(), connected=True
    )
    transport.read = "the SDK's read"
    eventhubs_frames.install(transport)
    yield transport, peer
    ours.close()
    peer.close()


def test_frames_come_out_whole_and_in_order_however_the_bytes_are_cut(connected) -> None:
    transport, peer = connected
    frames = [transfer(3, i, bytes([i]) * (100 + 700 * i)) for i in range(4)] + [
        frame(0, FlowFrame(next_incoming_id=0, incoming_window=5, next_outgoing_id=0, outgoing_window=5))
    ]
    stream = b"".join(frames)
    for cut in (1, 7, 8, 9, 1500, len(stream)):  # pieces of every size, from a byte to all at once
        pieces = [stream[start : start + cut] for start in range(0, len(stream), cut)]
        sender = threading.Thread(target=send_all, args=(peer, pieces))
        sender.start()
        received = [read_frame(transport) for _ in frames]
        sender.join()
        assert [channel for _, channel, _ in received] == [3, 3, 3, 3, 0]
        assert [bytes(header) for header, _, _ in received] == [f[:8] for f in frames]
        assert [decode_frame(body) for _, _, body in received] == [
            decode_frame(memoryview(f[8:])) for f in frames
        ]


def test_a_timeout_mid_frame_keeps_what_came_for_the_next_read(connected) -> None:
    transport, peer = connected
    whole = transfer(1, 7, b"x" * 2000)
    peer.sendall(whole[:5])
    with pytest.raises(TimeoutError):
        transport.read()
    peer.sendall(whole[5:1000])
    with pytest.raises(TimeoutError):
        transport.read()
    peer.sendall(whole[1000:])
    header, channel, body = transport.read()
    assert (bytes(header), channel, bytes(body)) == (whole[:8], 1, whole[8:])
    assert transport.connected


def test_a_body_handed_out_does_not_change_when_later_frames_arrive(connected) -> None:
    transport, peer = connected
    first, second = transfer(1, 1, b"a" * 50), transfer(1, 2, b"b" * 50)
    peer.sendall(first + second)
    _, _, body = transport.read()
    transport.read()
    assert bytes(body) == first[8:]


def test_bytes_the_sdk_kept_from_a_partial_frame_come_first() -> None:
    ours, peer = socket.socketpair()
    whole = transfer(2, 9, b"y" * 300)
    kept = io.BytesIO(b"junk" + whole[:20])
    kept.read(4)  # the SDK had consumed these already
    transport = SimpleNamespace(sock=ours, socket_lock=threading.Lock(), _read_buffer=kept, connected=True)
    reader = ChunkedFrames(transport)
    peer.sendall(whole[20:])
    _, channel, body = reader()
    assert (channel, bytes(body)) == (2, whole[8:])
    ours.close()
    peer.close()


def test_a_closed_connection_is_an_error_and_marks_the_transport_disconnected(connected) -> None:
    transport, peer = connected
    peer.sendall(transfer(1, 1, b"z" * 10)[:12])
    peer.close()
    with pytest.raises(OSError, match="closed connection"):
        transport.read()
    assert not transport.connected


def test_a_frame_of_another_type_than_expected_is_refused(connected) -> None:
    transport, peer = connected
    peer.sendall(transfer(1, 1, b"q"))
    with pytest.raises(ValueError, match="invalid frame type"):
        transport.read(verify_frame_type=1)  # SASL frames were expected


def test_installing_twice_keeps_one_reader(connected) -> None:
    transport, _ = connected
    reader = transport.read
    eventhubs_frames.install(transport)
    assert transport.read is reader


def test_a_websocket_transport_keeps_the_sdks_read() -> None:
    from azure.eventhub._pyamqp._transport import WebSocketTransport

    transport = WebSocketTransport("localhost")
    transport.sock = object()  # as if connected: its socket reads messages, not a byte stream
    sdk_read = transport.read
    eventhubs_frames.install(transport)
    assert transport.read == sdk_read
