"""The support bundle's redactor: secrets go in every shape they come in; names of things stay."""

from __future__ import annotations

import base64
import json

from federator.kubectl.redact import MARK, Redactor


def test_known_values_go_raw_and_base64_encoded() -> None:
    redact = Redactor({"s3cr3t-value-1": "secret/app/password"})
    encoded = base64.b64encode(b"s3cr3t-value-1").decode()
    assert redact.text(f"a s3cr3t-value-1 b {encoded}") == (
        "a [REDACTED:secret/app/password] b [REDACTED:secret/app/password:base64]"
    )


def test_shapes_of_secrets() -> None:
    redact = Redactor()
    cases = {
        "Endpoint=sb://x/;SharedAccessKeyName=a;SharedAccessKey=k1=": "[REDACTED:connection-string]",
        "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=k2==": "[REDACTED:connection-string]",
        "SharedAccessSignature sr=x&sig=k3&se=1&skn=a": f"SharedAccessSignature {MARK}",
        "https://a.blob.core.windows.net/c?sv=1&sig=k4": f"https://a.blob.core.windows.net/c?sv=1&sig={MARK}",
        "postgresql://app:k5@db/x": f"postgresql://app:{MARK}@db/x",
        "Authorization: Bearer abcdefgh12345678": f"Authorization: Bearer {MARK}",
        '{"clientSecret": "k6"}': f'{{"clientSecret": "{MARK}"}}',
        "password=k7 user=a": f"password={MARK} user=a",
        "token: k11": f'token: "{MARK}"',
    }
    for text, expected in cases.items():
        assert redact.text(text) == expected, text


def test_structure_blanks_secrets_and_keeps_references() -> None:
    redact = Redactor()
    secret = {"kind": "Secret", "metadata": {"name": "x"}, "data": {"connectionString": "ZW5k"}}
    applied = json.dumps({"kind": "Secret", "stringData": {"token": "k8"}})
    cleaned = redact.object(
        {
            "items": [secret],
            "metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": applied}},
            "env": [{"name": "DB_PASSWORD", "value": "k9"}, {"name": "LOG_LEVEL", "value": "debug"}],
            "spec": {"secretRef": {"name": "orders-weu", "key": "connectionString"}, "clientSecret": "k10"},
            "data": {"producerSecretRef": "orders-weu/connectionString"},
        }
    )
    assert cleaned["items"][0]["data"] == {"connectionString": MARK}
    assert "k8" not in cleaned["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
    assert cleaned["env"] == [{"name": "DB_PASSWORD", "value": MARK}, {"name": "LOG_LEVEL", "value": "debug"}]
    assert cleaned["spec"] == {
        "secretRef": {"name": "orders-weu", "key": "connectionString"},
        "clientSecret": MARK,
    }
    assert cleaned["data"] == {"producerSecretRef": "orders-weu/connectionString"}
