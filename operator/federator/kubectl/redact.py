"""Redaction for the support bundle: every secret value and connection string goes, whatever the object,
annotation, ConfigMap key or log line it hides in.

Three nets, each catching what the others may miss:
- the values of the Secrets the bundle's resources reference (read, never written): wherever one occurs,
  raw or base64-encoded, it is replaced by `[REDACTED:secret/<name>/<key>]`;
- shapes: Azure connection strings, shared access keys and signatures, storage account keys, passwords
  in URIs, bearer tokens and JWTs, `password=`/`"clientSecret": …` pairs;
- structure: a Secret's `data`/`stringData`, values under secret-looking keys, environment variables
  with secret-looking names, and JSON inside strings (kubectl's last-applied-configuration annotation)."""

from __future__ import annotations

import base64
import json
import re
from typing import Any

MARK = "[REDACTED]"
MIN_KNOWN_LENGTH = 6  # shorter values ("true", "1") would blank out ordinary words

# A whole connection string: its endpoint alone would be harmless, but it is one `;`-separated value.
_CONNECTION_STRINGS = re.compile(
    r"(?i)\b(?:Endpoint=sb://|DefaultEndpointsProtocol=|BlobEndpoint=|AccountName=)[^\s\"'<>]*"
)
_KEY_VALUES = re.compile(
    r"(?i)\b(SharedAccessKey|SharedAccessSignature|AccountKey|AccessKey|ClientSecret|Password|Pwd|Sig)"
    r"=([^;&\s\"'<>]+)"
)
_SAS = re.compile(r"(?i)SharedAccessSignature\s+[^\s\"'<>]+")
_URI_PASSWORD = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)([^/\s:@\"']+):([^@\s/\"']+)@")
_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=\-]{8,}")
_JWT = re.compile(r"\beyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{4,}")
_PRIVATE_KEY = re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?-----END [A-Z ]*PRIVATE KEY-----", re.DOTALL)
_NAMES = (
    r"password|passwd|secret|clientsecret|client_secret|token|apikey|api_key|accountkey|sastoken"
    r"|connectionstring|primarykey|secondarykey"
)
_PAIRS = re.compile(
    rf"(?i)((?<![/\w])[\"']?\b(?:{_NAMES})\b[\"']?\s*[:=]\s*)(?![\"']?\[REDACTED)(\"[^\"]*\"|'[^']*'|[^\s,;}}\]]+)"
)
_SECRET_KEY = re.compile(
    rf"(?i)^(?:{_NAMES}|.*(?:password|secret|token|connectionstring|sas|accountkey|privatekey).*)$"
)
# Keys whose values are names of things, never secrets, even though their names look alarming.
_NOT_SECRETS = re.compile(r"(?i)^(?:.*(?:ref|name|names|path|file|kind|type)|secretenv|tokenfile)$")


_NAMES_ONLY = {"secretEnv", "configMapFiles"}


class Redactor:
    def __init__(self, known: dict[str, str] | None = None) -> None:
        """`known`: secret value → where it comes from (`secret/orders-weu/connectionString`)."""
        self._known: list[tuple[str, str]] = []
        for value, origin in (known or {}).items():
            if len(value) < MIN_KNOWN_LENGTH:
                continue
            self._known.append((value, f"[REDACTED:{origin}]"))
            encoded = base64.b64encode(value.encode()).decode()
            self._known.append((encoded, f"[REDACTED:{origin}:base64]"))
        self._known.sort(key=lambda item: -len(item[0]))  # longest first: no half-replaced values

    def text(self, text: str) -> str:
        for value, mark in self._known:
            text = text.replace(value, mark)
        text = _PRIVATE_KEY.sub("[REDACTED:private-key]", text)
        text = _CONNECTION_STRINGS.sub("[REDACTED:connection-string]", text)
        text = _SAS.sub("SharedAccessSignature " + MARK, text)
        text = _KEY_VALUES.sub(lambda m: f"{m.group(1)}={MARK}", text)
        text = _URI_PASSWORD.sub(lambda m: f"{m.group(1)}{m.group(2)}:{MARK}@", text)
        text = _JWT.sub("[REDACTED:jwt]", text)
        text = _BEARER.sub(lambda m: f"{m.group(1)} {MARK}", text)
        return _PAIRS.sub(lambda m: f'{m.group(1)}"{MARK}"', text)

    def object(self, value: Any, key: str = "") -> Any:
        """A copy of a JSON value with every secret redacted."""
        if isinstance(value, dict):
            if value.get("kind") == "Secret":
                value = {
                    **value,
                    **{k: _blank(value[k]) for k in ("data", "stringData") if isinstance(value.get(k), dict)},
                }
            if _is_secret_env(value):
                value = {**value, "value": MARK}
            # Under a names-only key (a task config's `secretEnv`: Secret/key → variable name) the
            # values are names whatever their keys look like; text patterns still apply.
            return {k: self.object(v, "" if key in _NAMES_ONLY else k) for k, v in value.items()}
        if isinstance(value, list):
            return [self.object(v, key) for v in value]
        if isinstance(value, str):
            if key and _SECRET_KEY.match(key) and not _NOT_SECRETS.match(key) and value and value != MARK:
                return MARK
            return self._string(value)
        return value

    def _string(self, value: str) -> str:
        stripped = value.strip()
        if stripped[:1] in "{[" and len(stripped) > 1:
            try:
                parsed = json.loads(stripped)
            except ValueError:
                pass
            else:
                return json.dumps(self.object(parsed), separators=(",", ":"))
        return self.text(value)


def _blank(data: dict[str, Any]) -> dict[str, str]:
    return dict.fromkeys(data, MARK)


def _is_secret_env(value: dict[str, Any]) -> bool:
    name = value.get("name")
    return (
        isinstance(name, str)
        and isinstance(value.get("value"), str)
        and bool(_SECRET_KEY.match(name) or re.search(r"(?i)(KEY|PASSWORD|SECRET|TOKEN|CONNECTION)", name))
    )
