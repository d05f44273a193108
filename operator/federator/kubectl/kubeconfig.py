"""The user's kubeconfig → how to reach the API server, as kubectl would: `--kubeconfig`, else `$KUBECONFIG`
(files merged, the first value wins), else `~/.kube/config`; `--context`, else the current context.

Credentials: bearer token (inline or `tokenFile`), client certificate and key (files or inline data),
basic auth, and exec credential plugins (`kubelogin` on AKS, `aws eks get-token`...) run the way
client-go runs them. Relative paths are relative to the file that names them."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kopf
import yaml

from federator.kubectl.flags import DEFAULT_REQUEST_TIMEOUT_SECONDS, ClientOptions

EXEC_TIMEOUT_SECONDS = 60


class KubeconfigError(Exception):
    """The kubeconfig cannot be used; the message says which file, context or field."""


@dataclass(frozen=True)
class Target:
    """Where the plugin talks to: the connection, and the namespace commands default to."""

    connection: kopf.ConnectionInfo
    namespace: str
    context: str
    headers: Mapping[str, str | list[str]] = field(default_factory=dict)
    """Sent with every request (impersonation)."""
    request_timeout: float | None = DEFAULT_REQUEST_TIMEOUT_SECONDS
    """Seconds one request may take; None: no limit."""


def load(
    kubeconfig: Path | None = None,
    context: str | None = None,
    namespace: str | None = None,
    options: ClientOptions | None = None,
) -> Target:
    """The connection for `context` (default: the current one), with kubectl's generic options applied
    on top as kubectl applies them (`--cluster`, `--user`, `--server`, `--token`, ...)."""
    options = options or ClientOptions()
    paths = _paths(Path(options.kubeconfig) if options.kubeconfig else kubeconfig)
    merged = _merge(paths, required=not options.server)
    name = options.context or context or merged.current_context
    if not name and not options.server:
        raise KubeconfigError(f"no current context in {_names(paths)}: pass --context")
    ctx = merged.contexts.get(name or "") if name else {}
    if ctx is None:
        raise KubeconfigError(f"context {name!r} not found in {_names(paths)}")
    cluster_name = options.cluster or ctx.get("cluster", "")
    cluster = merged.clusters.get(cluster_name)
    if cluster is None and (options.cluster or not options.server):
        raise KubeconfigError(f"cluster {cluster_name!r} is not defined in {_names(paths)}")
    cluster = cluster or {}
    user_name = options.user or ctx.get("user", "")
    if options.user and options.user not in merged.users:
        raise KubeconfigError(f"user {options.user!r} is not defined in {_names(paths)}")
    user = merged.users.get(user_name, {})
    server = options.server or cluster.get("server")
    if not server:
        raise KubeconfigError(f"cluster {cluster_name!r} has no server")
    if options.insecure_skip_tls_verify and options.certificate_authority:
        raise KubeconfigError("--certificate-authority and --insecure-skip-tls-verify exclude each other")
    base = merged.origin.get(("user", user_name), Path.cwd())
    credentials = _credentials(user, base, cluster, options)
    cluster_dir = merged.origin.get(("cluster", cluster_name), Path.cwd())
    connection = kopf.ConnectionInfo(
        server=server,
        ca_path=_path(options.certificate_authority, Path.cwd())
        or _path(cluster.get("certificate-authority"), cluster_dir),
        ca_data=None if options.certificate_authority else cluster.get("certificate-authority-data"),
        insecure=options.insecure_skip_tls_verify or cluster.get("insecure-skip-tls-verify"),
        default_namespace=ctx.get("namespace"),
        **credentials,
    )
    return Target(
        connection,
        namespace or ctx.get("namespace") or "default",
        name or "(none)",
        headers=options.impersonation_headers(),
        request_timeout=options.request_timeout,
    )


@dataclass
class _Merged:
    current_context: str | None
    contexts: dict[str, dict[str, Any]]
    clusters: dict[str, dict[str, Any]]
    users: dict[str, dict[str, Any]]
    origin: dict[tuple[str, str], Path]
    """(section, name) → the directory of the file that defined it (relative paths start there)."""


def _paths(kubeconfig: Path | None) -> list[Path]:
    if kubeconfig is not None:
        return [kubeconfig]
    env = os.environ.get("KUBECONFIG", "")
    listed = [Path(p).expanduser() for p in env.split(os.pathsep) if p.strip()]
    if listed:
        return listed
    return [Path("~/.kube/config").expanduser()]


def _names(paths: list[Path]) -> str:
    return ", ".join(str(p) for p in paths)


def _merge(paths: list[Path], required: bool = True) -> _Merged:
    merged = _Merged(None, {}, {}, {}, {})
    readable = 0
    for path in paths:
        try:
            config = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except FileNotFoundError:
            continue  # as kubectl: missing files in $KUBECONFIG are skipped
        except (OSError, yaml.YAMLError) as err:
            raise KubeconfigError(f"cannot read kubeconfig {path}: {err}") from None
        if not isinstance(config, dict):
            raise KubeconfigError(f"kubeconfig {path} is not a mapping")
        readable += 1
        merged.current_context = merged.current_context or config.get("current-context") or None
        for section, key, store in (
            ("contexts", "context", merged.contexts),
            ("clusters", "cluster", merged.clusters),
            ("users", "user", merged.users),
        ):
            for item in config.get(section) or []:
                if isinstance(item, dict) and isinstance(item.get("name"), str) and item["name"] not in store:
                    store[item["name"]] = item.get(key) or {}
                    merged.origin[(key, item["name"])] = path.parent.resolve()
    if not readable and required:
        raise KubeconfigError(f"no kubeconfig found ({_names(paths)}): pass --kubeconfig or set KUBECONFIG")
    return merged


def _path(value: str | None, base: Path) -> str | None:
    if not value:
        return None
    return str((base / Path(value).expanduser()).resolve())


def _credentials(
    user: dict[str, Any], base: Path, cluster: dict[str, Any], options: ClientOptions
) -> dict[str, Any]:
    if options.token:  # given on the command line: it replaces the kubeconfig's, exec plugins included
        user = {k: v for k, v in user.items() if k not in {"exec", "tokenFile", "auth-provider"}}
        user["token"] = options.token
    if options.username:
        user = {**user, "username": options.username, "password": options.password}
    if options.client_certificate or options.client_key:
        user = {k: v for k, v in user.items() if k not in {"client-certificate-data", "client-key-data"}}
        user["client-certificate"] = _path(options.client_certificate, Path.cwd())
        user["client-key"] = _path(options.client_key, Path.cwd())
    token = user.get("token")
    if not token and user.get("tokenFile"):
        path = Path(_path(user["tokenFile"], base) or "")
        try:
            token = path.read_text(encoding="utf-8").strip()
        except OSError as err:
            raise KubeconfigError(f"cannot read the tokenFile {path}: {err.strerror}") from None
    found: dict[str, Any] = {
        "token": token or (user.get("auth-provider") or {}).get("config", {}).get("access-token"),
        "username": user.get("username"),
        "password": user.get("password"),
        "certificate_path": _path(user.get("client-certificate"), base),
        "certificate_data": user.get("client-certificate-data"),
        "private_key_path": _path(user.get("client-key"), base),
        "private_key_data": user.get("client-key-data"),
    }
    if user.get("exec"):
        found.update(_exec_credential(user["exec"], base, cluster))
    return found


def _exec_credential(spec: dict[str, Any], base: Path, cluster: dict[str, Any]) -> dict[str, Any]:
    """Run an exec credential plugin (client.authentication.k8s.io) and take its token or certificate."""
    command = spec.get("command")
    if not command:
        raise KubeconfigError("users[].user.exec has no command")
    api_version = spec.get("apiVersion", "client.authentication.k8s.io/v1")
    info: dict[str, Any] = {
        "apiVersion": api_version,
        "kind": "ExecCredential",
        "spec": {"interactive": False},
    }
    if spec.get("provideClusterInfo"):
        info["spec"]["cluster"] = {k: v for k, v in cluster.items() if k != "extensions"}
    env = {**os.environ, **{e["name"]: e["value"] for e in spec.get("env") or []}}
    env["KUBERNETES_EXEC_INFO"] = json.dumps(info)
    # A command with a slash is relative to the kubeconfig's folder; a bare name is looked up in PATH.
    executable = _path(command, base) if "/" in command else command
    try:
        done = subprocess.run(
            [executable or command, *(spec.get("args") or [])],
            env=env,
            capture_output=True,
            text=True,
            timeout=EXEC_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        hint = spec.get("installHint") or ""
        raise KubeconfigError(
            f"exec credential plugin {command!r} did not run: {err}. {hint}".strip()
        ) from None
    if done.returncode != 0:
        raise KubeconfigError(
            f"exec credential plugin {command!r} exited {done.returncode}: {done.stderr.strip()[-500:]}"
        )
    try:
        status = json.loads(done.stdout).get("status") or {}
    except (json.JSONDecodeError, AttributeError):
        raise KubeconfigError(f"exec credential plugin {command!r} printed no ExecCredential JSON") from None
    if not (status.get("token") or status.get("clientCertificateData")):
        raise KubeconfigError(
            f"exec credential plugin {command!r} returned neither a token nor a certificate"
        )
    if status.get("clientCertificateData"):
        return {
            "certificate_path": None,
            "private_key_path": None,
            "certificate_data": status["clientCertificateData"].encode(),
            "private_key_data": str(status.get("clientKeyData") or "").encode() or None,
        }
    return {"token": status["token"]}
