"""Wire-level helpers, without clients: frame padding, raw section editing, the journal."""

from __future__ import annotations

import struct

import pytest
from proton import Message, symbol

from federator_emulator.amqp import codec, padshim, splice
from federator_emulator.amqp.sequencing import DeliveryIds
from federator_emulator.state.journal import FileJournal, read_journal


def frame(performative: bytes, payload: bytes = b"") -> bytes:
    body = performative + payload
    return struct.pack(">IBBH", 8 + len(body), 2, 0, 0) + body


def test_open_with_one_field_is_padded_to_ten_nulls_after_it():
    open_frame = frame(b"\x00\x53\x10\xc0\x04\x01\xa1\x01c")  # open [container-id "c"]
    padded = padshim.pad_frame(open_frame)
    assert struct.unpack_from(">I", padded)[0] == len(padded)
    assert padded[8:14] == b"\x00\x53\x10\xc0\x0d\x0a"  # list8: 10 fields in 13 bytes
    assert padded[14:17] == b"\xa1\x01c"
    assert padded[17:] == b"\x40" * 9


def test_transfer_payload_is_left_untouched_by_padding():
    payload = b"\x00\x53\x75\xa0\x03abc"
    transfer = frame(b"\x00\x53\x14\x45", payload)  # transfer with an empty field list
    padded = padshim.pad_frame(transfer)
    assert padded.endswith(payload)
    assert padded[8:14] == b"\x00\x53\x14\xc0\x0c\x0b"


def test_non_amqp_and_complete_frames_pass_through():
    sasl = struct.pack(">IBBH", 12, 2, 1, 0) + b"\x00\x53\x40\x45"
    assert padshim.pad_frame(sasl) == sasl
    full_end = frame(b"\x00\x53\x17\xc0\x02\x01\x40")
    assert padshim.pad_frame(full_end) == full_end


def test_batch_envelope_splits_into_inner_messages():
    inner = [Message(body=f"m{i}".encode()).encode() for i in range(3)]
    envelope = codec.encode_section(codec.MESSAGE_ANNOTATIONS, {symbol("x-opt-partition-key"): "k"})
    payload = envelope + b"".join(codec.encode_section(codec.DATA, m) for m in inner)
    batch = codec.split_batch(payload)
    assert batch is not None
    assert batch[1] == inner
    assert codec.split_batch(Message(body="plain").encode()) is None


def test_spliced_annotations_merge_with_the_clients_own():
    message = Message(body=b"x", annotations={symbol("x-opt-partition-key"): "k"})
    entries = splice.SEQUENCE_NUMBER + splice.encode_long(7) + splice.OFFSET + splice.encode_string("42")
    decoded = Message()
    decoded.decode(splice.add_message_annotations(message.encode(), entries, 4))
    assert decoded.annotations == {
        "x-opt-partition-key": "k",
        "x-opt-sequence-number": 7,
        "x-opt-offset": "42",
    }
    assert decoded.body == b"x"


def test_journal_replays_intact_records_and_drops_a_torn_tail(tmp_path):
    path = tmp_path / "ns.journal"
    journal = FileJournal(path, fsync=True)
    journal.write({"k": "a"}, b"one")
    journal.write({"k": "b"}, b"two")
    journal.close()
    with path.open("ab") as f:
        f.write(b"\x00\x00\x00\x10partial")  # what a kill during a write leaves
    assert list(read_journal(path)) == [({"k": "a"}, b"one"), ({"k": "b"}, b"two")]
    assert list(read_journal(path)) == [({"k": "a"}, b"one"), ({"k": "b"}, b"two")]  # tail was cut


def test_padded_output_pads_every_frame_as_pad_frame_does_whatever_the_chunks():
    payload = b"\x00\x53\x75\xa0\x03abc"
    frames = [
        frame(b"\x00\x53\x10\xc0\x04\x01\xa1\x01c"),  # open
        frame(b"\x00\x53\x11\xc0\x03\x01\x60\x00\x00"),  # begin, remote-channel 0
        *(
            frame(b"\x00\x53\x14\xc0\x09\x05\x43\x52" + bytes([i, 0xA0, 1, i]) + b"\x43\x41", payload)
            for i in range(3)
        ),  # transfers: handle, delivery-id, tag, format, settled (as proton sends them)
        frame(b"\x00\x53\x14\x45", payload),  # a transfer with no fields
        frame(b"\x00\x53\x14\xc0\x0c\x0b\x43\x43\xa0\x01t\x43\x41\x42\x40\x40\x40\x42\x40", payload),  # full
        struct.pack(">IBBH", 8, 2, 0, 0),  # an empty frame (heartbeat)
    ]
    stream = b"AMQP\x00\x01\x00\x00" + b"".join(frames)
    expected = b"AMQP\x00\x01\x00\x00" + b"".join(padshim.pad_frame(f) for f in frames)
    for chunk in (1, 7, 64, len(stream)):
        out = padshim._PaddedOutput(DeliveryIds())
        for at in range(0, len(stream), chunk):
            out.feed(stream[at : at + chunk])
        assert bytes(out.padded) == expected, chunk
        assert not out.raw


def test_a_delivered_event_carries_the_brokers_annotations_and_metrics_whatever_its_sections():
    metrics = splice.delivery_annotations_section(splice.LAST_SEQUENCE_NUMBER + splice.encode_long(99), 2)
    messages = {  # encoded: the SDKs send no header unless asked, proton always does
        "plain": codec.encode_section(codec.APPLICATION_PROPERTIES, {"n": 1})
        + codec.encode_section(codec.DATA, b"x"),
        "with a header": Message(body=b"x", durable=True, ttl=5).encode(),
        "with annotations": Message(body=b"x", annotations={symbol("x-opt-partition-key"): "k"}).encode(),
    }
    for name, message in messages.items():
        for section in (metrics, b""):
            delivered = splice.delivered_event(7, 12_345_678_901, 1_700_000_000_000, message, section)
            codes = [code for code, _ in codec.iter_sections(delivered)]  # each section's size is right
            assert codes == sorted(set(codes)) and codec.MESSAGE_ANNOTATIONS in codes, name
            decoded = Message()
            decoded.decode(delivered)
            annotations = {str(k): v for k, v in (decoded.annotations or {}).items()}
            assert annotations["x-opt-sequence-number"] == 7, name
            assert annotations["x-opt-offset"] == "12345678901", name
            assert annotations["x-opt-enqueued-time"] == 1_700_000_000_000, name
            assert decoded.body == b"x", name
            assert decoded.instructions == ({"last_enqueued_sequence_number": 99} if section else None), name
    decoded.decode(splice.delivered_event(7, 0, 0, messages["with a header"], metrics))
    assert (decoded.durable, decoded.ttl) == (True, 5)
    decoded.decode(splice.delivered_event(7, 0, 0, messages["with annotations"], metrics))
    assert decoded.annotations[symbol("x-opt-partition-key")] == "k"


def test_a_batch_splits_whatever_the_size_of_its_messages_and_trailing_bytes_are_refused():
    inner = [Message(body=b"s").encode(), Message(body=b"l" * 1000).encode(), Message(body=b"s2").encode()]
    payload = b"".join(codec.encode_section(codec.DATA, m) for m in inner)
    assert payload[len(codec.encode_section(codec.DATA, inner[0])) + 3] == 0xB0  # the large one: vbin32
    batch = codec.split_batch(payload)
    assert batch is not None
    assert batch[1] == inner
    with pytest.raises(codec.CodecError):
        codec.split_batch(payload[:-1])
