"""bench.failover reads the primary back to each partition's last sequence number as the hub reports it
once the primary is back, not to the first wait that found nothing: right after a namespace comes back a
receiver may wait in vain before its first events arrive, and a read-back that stopped there found fewer
events than the primary held (a run read back 0 of the 156 the group had counted)."""

from __future__ import annotations

import sys

from support.resources import ROOT

sys.path.insert(0, str(ROOT))  # the benchmarks are run from the repository's root, not installed
from bench.failover_traffic import Tail, read_through

SINCE = 100.0


def test_a_partition_is_read_once_its_last_sequence_number_is() -> None:
    tails = {"0": Tail(41, SINCE + 5), "1": Tail(17, SINCE + 6)}
    assert not read_through({}, tails, SINCE)  # nothing read yet: not a wait that found nothing
    assert not read_through({"0": 41, "1": 16}, tails, SINCE)
    assert read_through({"0": 41, "1": 17}, tails, SINCE)


def test_partitions_with_nothing_to_read_since_the_start_are_read() -> None:
    tails = {"0": Tail(None, None), "1": Tail(17, SINCE - 1), "2": Tail(3, SINCE + 1)}
    assert not read_through({}, tails, SINCE)  # partition 2 holds an event enqueued since
    assert read_through({"2": 3}, tails, SINCE)  # empty, and last enqueued before the start
    assert not read_through({"2": 3}, tails, None)  # from its start: partition 1's events are read too
