"""Walks over a frozen spec are made once per spec object: an observe pass reuses the spec it parsed, and
its Secret keys and workload identities do not change while it lives."""

from __future__ import annotations

import gc
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict

from federator.planning.memo import per_object


class Thawed(BaseModel):
    names: list[str]


class Frozen(Thawed):
    model_config = ConfigDict(frozen=True)


def counting_walk() -> tuple[list[Thawed], Callable[[Thawed], list[str]]]:
    walked: list[Thawed] = []

    @per_object
    def names(model: Thawed) -> list[str]:
        walked.append(model)
        return list(model.names)

    return walked, names


def test_a_frozen_spec_is_walked_once_and_callers_get_their_own_list() -> None:
    walked, names = counting_walk()
    spec = Frozen(names=["a", "b"])

    first = names(spec)
    first.append("changed by a caller")

    assert names(spec) == ["a", "b"]
    assert walked == [spec]


def test_an_equal_spec_of_another_generation_is_walked_again() -> None:
    walked, names = counting_walk()
    old, new = Frozen(names=["a"]), Frozen(names=["a"])

    names(old)
    names(new)

    assert [id(m) for m in walked] == [id(old), id(new)]


def test_a_spec_that_is_gone_is_forgotten_so_its_address_can_serve_another() -> None:
    _, names = counting_walk()
    assert names(Frozen(names=["first"])) == ["first"]
    gc.collect()
    # A new object may be given the same address: it must not get the first one's result.
    for attempt in range(50):
        assert names(Frozen(names=[f"next-{attempt}"])) == [f"next-{attempt}"]


def test_a_spec_that_is_not_frozen_is_walked_every_time() -> None:
    walked, names = counting_walk()
    spec = Thawed(names=["a"])

    names(spec)
    names(spec)

    assert walked == [spec, spec]
