"""The editor chain: each editor keeps, changes or drops an event before routing."""

from __future__ import annotations

from collections.abc import Sequence

from federator.api.editors import Editor
from federator_spark.editors.base import EventEditor
from federator_spark.editors.filter import FilterStep


def build_chain(editors: Sequence[Editor]) -> list[EventEditor]:
    """The runnable chain for the spec's editors; raises NotImplementedError for editors not built yet."""
    chain: list[EventEditor] = []
    for index, editor in enumerate(editors):
        if editor.filter is not None:
            chain.append(FilterStep.build(editor.filter.condition))
            continue
        kinds = [name for name, value in editor if value is not None]
        raise NotImplementedError(
            f"editors[{index}]: editor {kinds} is not supported by the replication app yet"
        )
    return chain
