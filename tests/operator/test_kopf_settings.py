"""The operator asks the API server only for what its Role grants: with named namespaces (the chart's
namespaced install) kopf must not list namespaces cluster-wide, which answers 403 and made kopf retry
for about 50 s before any handler ran."""

from __future__ import annotations

from federator.controller import kopf_settings


def test_named_namespaces_are_not_scanned() -> None:
    assert kopf_settings(["payments", "orders"], all_namespaces=False).scanning.disabled


def test_patterns_need_the_namespace_list() -> None:
    for pattern in ("team-*", "!kube-system", "a,b", "ns?"):
        assert not kopf_settings(["payments", pattern], all_namespaces=False).scanning.disabled


def test_every_namespace_is_watched_cluster_wide() -> None:
    assert not kopf_settings([], all_namespaces=True).scanning.disabled
