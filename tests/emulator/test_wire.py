"""Wire-level helpers, without clients: frame padding, raw section editing, the journal."""

from __future__ import annotations

import struct

from proton import Message, symbol

from federator_emulator.amqp import codec, padshim, splice
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
