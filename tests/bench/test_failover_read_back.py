"""bench.failover reads back what a forced switch left on the primary the way the group confirms it: per
key (a key keeps its partition on every hub, and the geo task copies a partition in order) the events
the primary held when it came back beyond where the geo copy stood then — events never copied from
before the task's start are not left behind by the switch, and an event whose send failed but that the
primary stored is."""

from __future__ import annotations

import sys

from federator.local.drill import Archived, Sent
from support.resources import ROOT

sys.path.insert(0, str(ROOT))  # the benchmarks are run from the repository's root, not installed
from bench.failover import geo_rpo, left_on_primary, reached

REVIVED = 100.0


def held(key: int, number: int, sent_at: float) -> Archived:
    return Archived(key, number, "primary", sent_at, REVIVED + 1)


def test_left_behind_is_what_the_primary_held_beyond_where_the_copy_stood_per_key() -> None:
    copies = [held(0, 3, 10.0), held(0, 4, 11.0), held(1, 2, 10.5)]
    copied = reached(copies)
    assert copied == {0: 4, 1: 2}
    primary = [
        held(0, 1, 1.0),  # before the task started, never copied: not this switch's doing
        held(0, 4, 11.0),
        held(0, 5, 12.0),
        held(1, 3, 12.5),  # its send failed at the kill, but the primary stored it
        held(2, 0, 12.6),  # a key the copy had not reached at all
        held(0, 6, REVIVED + 5),  # sent after the primary came back (a failback): not left behind
    ]
    assert left_on_primary(primary, copied, REVIVED) == {(0, 5), (1, 3), (2, 0)}


def test_the_span_is_the_worst_partitions_from_its_newest_event_copied_to_its_newest_left_behind() -> None:
    sent = [
        Sent(0, 4, "primary", 11.0),  # partition 0 (of 2)
        Sent(0, 5, "primary", 12.0),
        Sent(1, 2, "primary", 12.3),  # partition 1
        Sent(1, 3, "primary", 12.4),
    ]
    assert geo_rpo(sent, frozenset({(0, 5), (1, 3)}), killed=13.0, partitions=2) == 1.0
    assert geo_rpo(sent, frozenset(), killed=13.0, partitions=2) is None
