"""Building a task's editor chain from its spec, on the driver: each editor's step, checked, in order. The
steps travel to the executors in the task's plan; a worker imports the module of each kind it holds."""

from __future__ import annotations

from collections.abc import Sequence

from federator_contract.api.editors import Editor
from federator_contract.taskconfig import TaskConfig, TaskConfigError
from federator_spark.editors.attest import AttestStep
from federator_spark.editors.base import EventEditor
from federator_spark.editors.chain import ChainStep
from federator_spark.editors.dedupe import DedupeStep
from federator_spark.editors.enrich import EnrichStep
from federator_spark.editors.filter import FilterStep
from federator_spark.editors.transcode import TranscodeStep
from federator_spark.editors.transform import TransformStep
from federator_spark.editors.validate import ValidateStep
from federator_spark.editors.verify import VerifyStep


def build_chain(editors: Sequence[Editor], config: TaskConfig) -> list[EventEditor]:
    """The runnable chain for the spec's editors; raises TaskConfigError naming the editor at fault."""
    chain: list[EventEditor] = []
    for index, editor in enumerate(editors):
        try:
            chain.append(_build(index, editor, config))
        except TaskConfigError as error:
            raise TaskConfigError(f"editors[{index}]: {error}") from None
    return chain


def _build(index: int, editor: Editor, config: TaskConfig) -> EventEditor:
    kinds = [name for name, value in editor if value is not None]
    if len(kinds) != 1:
        raise TaskConfigError(f"set exactly one editor, not {kinds}")
    if editor.filter is not None:
        return FilterStep.build(editor.filter)
    if editor.transform is not None:
        return TransformStep.build(editor.transform)
    if editor.validate_ is not None:
        return ValidateStep.build(editor.validate_, config)
    if editor.enrich is not None:
        return EnrichStep.build(editor.enrich, config)
    if editor.transcode is not None:
        return TranscodeStep.build(editor.transcode, config)
    if editor.attest is not None:
        return AttestStep.build(editor.attest, config)
    if editor.verify is not None:
        return VerifyStep.build(editor.verify, config)
    if editor.chain is not None:
        return ChainStep(editor.chain.property, f"{index}-chain")
    assert editor.dedupe is not None
    return DedupeStep.build(editor.dedupe, f"{index}-dedupe")
