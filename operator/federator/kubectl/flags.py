"""kubectl's generic client options (`kubectl options`), accepted by every command anywhere on the line as
kubectl plugins are expected to (cli-runtime's genericclioptions.ConfigFlags): which kubeconfig, context,
cluster and user, the server and its CA, credentials, impersonation and the request timeout. They are
taken off the command line before the command's own options are parsed, and left out of each command's
help as kubectl leaves them out; `kubectl federator options` lists them."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

# The client's own default: kubectl's is 0 (wait forever), which leaves an on-call engineer staring at a
# silent API server; 0 still means no timeout.
DEFAULT_REQUEST_TIMEOUT_SECONDS = 30.0


class FlagError(ValueError):
    """A generic option given wrongly; the message names it."""


@dataclass(frozen=True)
class ClientOptions:
    """Overrides of the kubeconfig, as kubectl applies them (None: the kubeconfig decides)."""

    kubeconfig: str | None = None
    context: str | None = None
    cluster: str | None = None
    user: str | None = None
    server: str | None = None
    certificate_authority: str | None = None
    insecure_skip_tls_verify: bool = False
    client_certificate: str | None = None
    client_key: str | None = None
    token: str | None = None
    username: str | None = None
    password: str | None = None
    impersonate: str | None = None
    impersonate_groups: tuple[str, ...] = ()
    impersonate_uid: str | None = None
    request_timeout: float | None = DEFAULT_REQUEST_TIMEOUT_SECONDS
    """Seconds; None: no timeout."""

    def impersonation_headers(self) -> dict[str, str | list[str]]:
        """The API server's impersonation headers (Impersonate-User, -Group, -Uid), as client-go sends."""
        if not self.impersonate:
            return {}
        headers: dict[str, str | list[str]] = {"Impersonate-User": self.impersonate}
        if self.impersonate_groups:
            headers["Impersonate-Group"] = list(self.impersonate_groups)
        if self.impersonate_uid:
            headers["Impersonate-Uid"] = self.impersonate_uid
        return headers


# (flags, attribute, help): every one a string option unless listed in _BOOLEANS / _MULTIPLE.
_OPTIONS: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (("--kubeconfig",), "kubeconfig", "Path to the kubeconfig file (default: $KUBECONFIG, ~/.kube/config)."),
    (("--context",), "context", "The kubeconfig context to use (default: the current one)."),
    (("--cluster",), "cluster", "The kubeconfig cluster to use."),
    (("--user",), "user", "The kubeconfig user to use."),
    (("-s", "--server"), "server", "The address and port of the Kubernetes API server."),
    (
        ("--certificate-authority",),
        "certificate_authority",
        "Path to a cert file for the certificate authority.",
    ),
    (
        ("--insecure-skip-tls-verify",),
        "insecure_skip_tls_verify",
        "If true, the server's certificate will not be checked for validity (insecure).",
    ),
    (("--client-certificate",), "client_certificate", "Path to a client certificate file for TLS."),
    (("--client-key",), "client_key", "Path to a client key file for TLS."),
    (("--token",), "token", "Bearer token for authentication to the API server."),
    (("--username",), "username", "Username for basic authentication to the API server."),
    (("--password",), "password", "Password for basic authentication to the API server."),
    (("--as",), "impersonate", "Username to impersonate for the operation."),
    (("--as-group",), "impersonate_groups", "Group to impersonate for the operation; repeat for several."),
    (("--as-uid",), "impersonate_uid", "UID to impersonate for the operation."),
    (
        ("--request-timeout",),
        "request_timeout",
        "How long to wait for one answer of the API server before giving up: a number of seconds or a "
        "duration (1s, 2m, 1m30s); 0 waits forever. Default 30s.",
    ),
)
_BOOLEANS = {"insecure_skip_tls_verify"}
_MULTIPLE = {"impersonate_groups"}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


def parse_duration(text: str) -> float | None:
    """kubectl's --request-timeout: `30` (seconds), `1m30s`, `500ms`; 0 means no timeout (None)."""
    value = text.strip()
    if re.fullmatch(r"\d+", value):
        seconds = float(value)
    elif value and _DURATION.sub("", value) == "":
        seconds = sum(float(n) * _UNIT_SECONDS[unit] for n, unit in _DURATION.findall(value))
    else:
        raise FlagError(
            f"invalid argument {text!r} for --request-timeout: seconds (30) or a duration (1s, 2m, 1m30s)"
        )
    return None if seconds == 0 else seconds


_BY_FLAG = {flag: attribute for flags, attribute, _ in _OPTIONS for flag in flags}


def take(args: Sequence[str]) -> tuple[ClientOptions, list[str]]:
    """The generic options anywhere before `--` (`--as x`, `--as=x`, `-s x`; booleans alone or `=true`),
    and the arguments left for the command."""
    found: dict[str, Any] = {}
    rest: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        index += 1
        if arg == "--":
            rest.extend(args[index - 1 :])
            break
        flag, equals, value = arg.partition("=")
        attribute = _BY_FLAG.get(flag)
        if attribute is None:
            rest.append(arg)
            continue
        if attribute in _BOOLEANS:
            found[attribute] = _boolean(flag, value) if equals else True
            continue
        if not equals:
            if index >= len(args):
                raise FlagError(f"flag needs an argument: {flag}")
            value = args[index]
            index += 1
        if attribute in _MULTIPLE:
            found[attribute] = (*found.get(attribute, ()), value)
        else:
            found[attribute] = parse_duration(value) if attribute == "request_timeout" else value
    options = replace(ClientOptions(), **found)
    if not options.impersonate and (options.impersonate_groups or options.impersonate_uid):
        raise FlagError("--as-group and --as-uid need --as (the user to impersonate)")
    return options, rest


def _boolean(flag: str, value: str) -> bool:
    if value.lower() in {"true", "t", "1"}:
        return True
    if value.lower() in {"false", "f", "0"}:
        return False
    raise FlagError(f"invalid argument {value!r} for {flag}: true or false")


def describe(width: int = 80) -> str:
    """`kubectl federator options`: the generic options, as `kubectl options` lists its own."""
    entries = [
        (", ".join(flags) + ("" if attr in _BOOLEANS else "=VALUE"), text) for flags, attr, text in _OPTIONS
    ]
    entries.append(
        ("-n, --namespace=NAME", "The namespace (default: the context's namespace); on every command.")
    )
    lines = ["The following options can be passed to any command:", ""]
    for names, text in entries:
        lines += [
            f"    {names}:",
            *textwrap.wrap(text, width, initial_indent=" " * 8, subsequent_indent=" " * 8),
            "",
        ]
    return "\n".join(lines)


def pflag_booleans(args: Sequence[str], boolean_flags: set[str]) -> list[str]:
    """kubectl (pflag) accepts `--flag=true|false` for a boolean flag; the command's parser only `--flag`."""
    found: list[str] = []
    for index, arg in enumerate(args):
        if arg == "--":
            found.extend(args[index:])
            break
        flag, equals, value = arg.partition("=")
        if equals and flag in boolean_flags:
            if _boolean(flag, value):
                found.append(flag)
            continue
        found.append(arg)
    return found
