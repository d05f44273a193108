"""Credentials are refused wherever they appear in a document, at their field path, and never repeated
in any output: not by `validate`, not by `render` (which refuses what `validate` refuses)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner
from validation_helpers import problems, task

from federator.cli.main import app
from federator.validation.semantic import semantic_problems
from federator_contract.api.kinds import REPLICATION_TASK

SAS_URL = "https://acct.blob.core.windows.net/c?sv=2022-11-02&ss=b&srt=co&sp=rl&se=2027-01-01&sig=Zm9vYmFyYmF6cXV4cXV1eA%3D"
CONNECTION = "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=send;SharedAccessKey=Zm9vYmFyYmF6cXV4cXV1eA="
SAS_TOKEN = "SharedAccessSignature sr=ns.servicebus.windows.net&sig=Zm9vYmFyYmF6cXV4cXV1eA%3D&se=1&skn=send"
ACCOUNT_KEY = "Zm9vYmFy" * 10 + "Zm9vYm=="  # 88 base64 characters: a storage account key's shape
SECRET_MARK = "Zm9vYmF"  # in every value above, and in no message

runner = CliRunner()


def place(where: str, value: str) -> dict[str, Any]:
    obj = task()
    match where:
        case "annotation":
            obj["metadata"]["annotations"] = {"upstream": value}
        case "label-key":
            obj["metadata"]["labels"] = {value: "x"}
        case "image":
            obj["spec"]["runtime"] = {"image": value}
        case "property":
            obj["spec"]["targets"][0]["setProperties"] = {"origin": value}
        case "schema":
            obj["spec"]["editors"] = [
                {"validate": {"jsonSchema": {"description": value}, "onInvalid": "drop"}}
            ]
    return obj


@pytest.mark.parametrize(
    ("where", "value", "path", "shape"),
    [
        (
            "annotation",
            CONNECTION,
            "metadata.annotations.upstream",
            "a connection string with SharedAccessKey",
        ),
        ("image", SAS_URL, "spec.runtime.image", "a SAS token (sig=)"),
        ("property", SAS_TOKEN, "spec.targets[0].setProperties.origin", "a SAS token"),
        ("property", ACCOUNT_KEY, "spec.targets[0].setProperties.origin", "a storage account key"),
        (
            "schema",
            CONNECTION,
            "spec.editors[0].validate.jsonSchema.description",
            "a connection string with SharedAccessKey",
        ),
    ],
)
def test_a_credential_is_refused_wherever_it_is(where: str, value: str, path: str, shape: str) -> None:
    found = problems(place(where, value))
    refusal = "inline secrets are not accepted; reference a Secret instead (e.g. secretRef)"
    assert f"{path}: contains {shape}: {refusal}" in found
    assert all(SECRET_MARK not in p for p in found)


def test_a_credential_pasted_as_a_key_is_refused_and_its_path_redacted() -> None:
    found = problems(place("label-key", CONNECTION))
    assert found and all(SECRET_MARK not in p for p in found)
    assert any(p.startswith("metadata.labels.<redacted>: contains a connection string") for p in found)


@pytest.mark.parametrize(
    "value", ["sig=short", "https://example.com/a?signature=abc", "design=blue", "x" * 88]
)
def test_look_alikes_are_not_credentials(value: str) -> None:
    assert problems(place("annotation", value)) == []


@pytest.mark.parametrize("where", ["annotation", "image", "property"])
def test_validate_and_render_refuse_it_alike_and_print_it_nowhere(where: str, tmp_path: Path) -> None:
    manifest = tmp_path / "task.yaml"
    manifest.write_text(yaml.safe_dump(place(where, SAS_URL)), encoding="utf-8")
    validated = runner.invoke(app, ["validate", str(manifest)])
    rendered = runner.invoke(app, ["render", "-f", str(manifest)])
    assert validated.exit_code == 1 and rendered.exit_code == 1
    assert "a SAS token (sig=)" in validated.output and "a SAS token (sig=)" in rendered.output
    assert SECRET_MARK not in validated.output + rendered.output


def test_a_checker_quoting_a_credential_has_its_message_withheld() -> None:
    # jsonschema's wording quotes the offending value (`'Endpoint=…' is not of type 'number'`); the
    # operator's Stalled message is made of these.
    schema = {"type": "object", "properties": {"a": {"minimum": CONNECTION}}}
    spec = task(editors=[{"validate": {"jsonSchema": schema, "onInvalid": "drop"}}])["spec"]
    found = [str(p) for p in semantic_problems(REPLICATION_TASK, spec)]
    assert "spec.editors[0].validate.jsonSchema: <message withheld: it would repeat a credential>" in found
    assert all(SECRET_MARK not in p for p in found)


def test_a_credential_in_a_name_is_not_repeated_by_the_document_label(tmp_path: Path) -> None:
    obj = task()
    obj["metadata"]["name"] = CONNECTION
    manifest = tmp_path / "task.yaml"
    manifest.write_text(yaml.safe_dump(obj), encoding="utf-8")
    result = runner.invoke(app, ["validate", str(manifest)])
    assert result.exit_code == 1 and "default/<redacted>" in result.output
    assert SECRET_MARK not in result.output
