"""Building the chain from the spec: every editor kind runs, and bad settings name the editor."""

from __future__ import annotations

import pytest
from editor_helpers import build, task_config

from federator_contract.api.editors import Editor
from federator_contract.taskconfig import TaskConfigError
from federator_spark.editors.building import build_chain

EVERY_KIND = [
    {"filter": {"condition": "a = 1"}},
    {"transform": {"flatten": {}}},
    {"validate": {"jsonSchema": {"type": "object"}}},
    {"enrich": {"properties": {"a": "1"}}},
    {"transcode": {"inputCompression": "gzip"}},
    {"attest": {"keySecretRef": {"name": "k", "key": "v"}}},
    {"verify": {"keySecretRef": {"name": "k", "key": "v"}}},
    {"chain": {}},
    {"dedupe": {}},
]


def test_every_editor_kind_builds_in_spec_order(tmp_path):
    config = task_config(tmp_path, secret_env={"k/v": "FEDERATOR_SECRET_k__v"})
    chain = build_chain([Editor.model_validate(e) for e in EVERY_KIND], config)
    assert [editor.kind for editor in chain] == [next(iter(e)) for e in EVERY_KIND]


def test_errors_name_the_editor_index(tmp_path):
    config = task_config(tmp_path)
    editors = [
        Editor.model_validate(e)
        for e in [{"chain": {}}, {"attest": {"keySecretRef": {"name": "k", "key": "v"}}}]
    ]
    with pytest.raises(
        TaskConfigError, match=r"^editors\[1\]: secretEnv has no environment variable for secret 'k/v'$"
    ):
        build_chain(editors, config)


def test_an_editor_with_two_kinds_is_refused(tmp_path):
    with pytest.raises(
        TaskConfigError, match=r"editors\[0\]: set exactly one editor, not \['chain', 'dedupe'\]"
    ):
        build({"chain": {}, "dedupe": {}}, task_config(tmp_path))
