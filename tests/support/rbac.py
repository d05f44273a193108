"""What an API request needs from RBAC, and what a Role grants, as (apiGroup, resource, verb) triples.

The fake API server enforces no RBAC, so the chart's Role could lack a verb the operator uses and every
test would still pass (it happened: the driver pod list). `support.kube` records each request with its
User-Agent; a test's requests from the operator (kopf's and Federator's own client) must be granted by
the Role the chart renders for a watched namespace. Verbs follow the Kubernetes docs' "Determine the
request verb" (https://kubernetes.io/docs/reference/access-authn-authz/authorization/#determine-the-request-verb).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

Triple = tuple[str, str, str]
OPERATOR_AGENTS = ("kopf/", "federator-operator")
_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


def needed(method: str, path: str, watch: bool) -> Triple | None:
    """The permission a request needs; None for discovery (`/api`, `/apis/<group>/<version>`), which
    every authenticated user may read."""
    parts = [p for p in path.split("/") if p]
    if parts[:1] == ["api"]:
        group, rest = "", parts[2:]
    elif parts[:1] == ["apis"] and len(parts) > 3:
        group, rest = parts[1], parts[3:]
    else:
        return None
    if not rest:
        return None
    if rest[0] == "namespaces" and len(rest) >= 3:
        rest = rest[2:]  # /namespaces/<ns>/<resource>...
    resource = rest[0] + (f"/{rest[2]}" if len(rest) > 2 else "")
    named = len(rest) > 1
    if method == "GET":
        verb = "watch" if watch else "get" if named else "list"
    else:
        verb = _VERBS.get(method, method.lower())
    return group, resource, verb


def granted(rules: Iterable[dict[str, Any]]) -> set[Triple]:
    return {
        (group, resource, verb)
        for rule in rules
        for group in rule.get("apiGroups", [])
        for resource in rule.get("resources", [])
        for verb in rule.get("verbs", [])
    }
