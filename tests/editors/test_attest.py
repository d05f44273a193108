"""attest and verify: HMAC-SHA256 over the body and the sorted user properties, except the signature
property itself and the `repl-*` properties later hops append."""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest
from editor_helpers import apply, build, event, open_step, task_config

from federator_spark.editors.base import Rejected

KEY_ENV = "FEDERATOR_SECRET_signing__hmacKey"
SECRET_ENV = {"signing/hmacKey": KEY_ENV}
KEY_REF = {"name": "signing", "key": "hmacKey"}


@pytest.fixture(autouse=True)
def signing_key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "s3cret-ключ")


def attest(tmp_path, **spec):
    step, _ = open_step(
        build({"attest": {"keySecretRef": KEY_REF, **spec}}, task_config(tmp_path, secret_env=SECRET_ENV))
    )
    return step


def verify(tmp_path, **spec):
    step, _ = open_step(
        build({"verify": {"keySecretRef": KEY_REF, **spec}}, task_config(tmp_path, secret_env=SECRET_ENV))
    )
    return step


def signed(tmp_path, **kw):
    result = apply(
        attest(tmp_path), event('{"amount": 5}', properties={"b": "2", "a": "ü", "repl-sequence": "7"}, **kw)
    )
    assert result is not None
    return result


def test_the_signature_is_the_documented_hmac_over_sorted_properties_and_body(tmp_path):
    result = signed(tmp_path)
    canonical = (
        json.dumps([["a", "ü"], ["b", "2"]], separators=(",", ":"), ensure_ascii=False).encode()
        + b"\n"
        + b'{"amount": 5}'
    )
    expected = hmac.new("s3cret-ключ".encode(), canonical, hashlib.sha256).hexdigest()
    assert result.properties["repl-signature"] == expected
    assert result.body == b'{"amount": 5}'


def test_a_signed_event_verifies_even_after_later_hops_add_repl_properties(tmp_path):
    result = signed(tmp_path)
    later = result.edited(
        properties={**result.properties, "repl-sequence": "7;9", "repl-target": "x/y", "repl-chain": "ab"}
    )
    assert apply(verify(tmp_path), later) is later


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"body": b'{"amount": 500}'}, "signature mismatch"),
        ({"properties": {"a": "ü", "b": "3"}}, "signature mismatch"),
        ({"properties": {"a": "ü", "b": "2", "added": "x"}}, "signature mismatch"),
        ({"properties": {"a": "ü", "b": "2", "repl-signature": "0" * 64}}, "signature mismatch"),
        (
            {"properties": {"a": "ü", "b": "2"}, "drop_signature": True},
            "unsigned: no property repl-signature",
        ),
    ],
)
def test_a_tampered_or_unsigned_event_fails_verification(tmp_path, change, reason):
    result = signed(tmp_path)
    drop_signature = change.pop("drop_signature", False)
    if "properties" in change and not drop_signature:
        change["properties"].setdefault("repl-signature", result.properties["repl-signature"])
    tampered = result.edited(**change)
    with pytest.raises(Rejected, match=reason):
        apply(verify(tmp_path), tampered)
    assert apply(verify(tmp_path, onFailure="drop"), tampered) is None


def test_another_key_does_not_verify(tmp_path, monkeypatch):
    result = signed(tmp_path)
    monkeypatch.setenv(KEY_ENV, "another key")
    with pytest.raises(Rejected, match="signature mismatch"):
        apply(verify(tmp_path), result)


def test_a_custom_signature_property_is_itself_excluded(tmp_path):
    result = apply(attest(tmp_path, property="sig"), event("x", properties={"a": "1"}))
    assert result is not None and set(result.properties) == {"a", "sig"}
    assert apply(verify(tmp_path, property="sig"), result) is result


def test_the_key_is_read_when_the_task_opens_and_never_kept_in_the_plan(tmp_path, monkeypatch):
    editor = build({"attest": {"keySecretRef": KEY_REF}}, task_config(tmp_path, secret_env=SECRET_ENV))
    assert "s3cret" not in repr(editor)
    monkeypatch.delenv(KEY_ENV)
    with pytest.raises(RuntimeError, match=f"environment variable {KEY_ENV} .* is not set"):
        open_step(editor)
