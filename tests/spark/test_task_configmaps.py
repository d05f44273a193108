"""A shared application's driver follows its task ConfigMaps through the API server (the suite's test
API server, over real HTTP watches): list, then watch from the list's resourceVersion; an outage is
retried and the changes made meanwhile arrive when it answers again; a 410 Gone means list again. No JVM
here: what the driver would run is what its reader finds (``federator_spark.fleet.decide`` acts on it,
as on files)."""

from __future__ import annotations

import json
import logging
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trustme
import yaml
from kube_configmaps import (
    CONFIGMAPS,
    CompactingEmulator,
    CuttableProxy,
    configmap,
    cuttable_api,
    put,
    remove,
)

from federator_spark import host
from federator_spark.config_watch import ConfigMapReader, ConfigMapWatch
from federator_spark.fleet import Found
from federator_spark.kube_client import ApiAccess, Expired, NotInCluster, failure
from support.kube import KubeServer
from support.polling import eventually, eventually_more
from support.rbac import granted, needed
from support.resources import ROOT

SELECTOR = "federator.io/application=orders"


@pytest.fixture
def served() -> Iterator[tuple[KubeServer, CuttableProxy]]:
    with cuttable_api() as both:
        yield both


@pytest.fixture
def api(served: tuple[KubeServer, CuttableProxy]) -> KubeServer:
    return served[0]


@pytest.fixture
def proxy(served: tuple[KubeServer, CuttableProxy]) -> CuttableProxy:
    return served[1]


@pytest.fixture
def watch(proxy: CuttableProxy, tmp_path: Path) -> Iterator[ConfigMapWatch]:
    token = tmp_path / "token"
    token.write_text("a-token", encoding="utf-8")
    access = ApiAccess(proxy.url, token_file=token)
    started = ConfigMapWatch(
        access, "default", SELECTOR, watch_seconds=2, retry_seconds=0.2, retry_cap_seconds=1
    )
    started.start()
    yield started
    started.stop()


def task(name: str, trigger: int = 3) -> dict[str, Any]:
    endpoint = {"connection": {"emulator": {"namespace": "a"}}}
    return {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "source": {"eventHub": {**endpoint, "eventHubName": name}},
            "targets": [{"name": "copy", "eventHub": {**endpoint, "eventHubName": f"{name}-copy"}}],
            "runtime": {"triggerIntervalSeconds": trigger},
        },
        "checkpointLocation": f"file:///checkpoints/{name}",
    }


def configs(reader: ConfigMapReader) -> dict[str, Any]:
    """What the driver would run: by source, the task's trigger interval, or the error."""
    return {item.source: summary(item) for item in reader.read()}


def summary(item: Found) -> Any:
    return item.config.spec.runtime.trigger_interval_seconds if item.config else item.error


def source(name: str) -> str:
    return f"ConfigMap default/{name}"


def test_the_matching_configmaps_are_listed_then_followed_as_they_are_added_edited_and_removed(
    api: KubeServer, watch: ConfigMapWatch
) -> None:
    put(api, "a-task", task("a"))
    put(api, "elsewhere-task", task("z"), application="billing")  # another application's
    reader = ConfigMapReader(watch)
    eventually(lambda: configs(reader) == {source("a-task"): 3}, message="a is listed")

    put(api, "b-task", task("b"))
    eventually(lambda: configs(reader) == {source("a-task"): 3, source("b-task"): 3}, message="b added")
    put(api, "a-task", task("a", trigger=9))
    eventually(lambda: configs(reader) == {source("a-task"): 9, source("b-task"): 3}, message="a edited")
    remove(api, "b-task")
    eventually(lambda: configs(reader) == {source("a-task"): 9}, message="b removed")

    assert api.emulator.times("GET", CONFIGMAPS) == 1  # one list; everything after came by the watch


def test_what_the_driver_asks_of_the_api_server_is_what_the_charts_spark_role_grants(
    api: KubeServer, watch: ConfigMapWatch, helm: Any
) -> None:
    put(api, "a-task", task("a"))
    eventually(lambda: ConfigMapReader(watch).read(), message="listed")
    eventually(lambda: api.emulator.times("GET", CONFIGMAPS, watch=True) >= 1, message="watched")
    rendered = yaml.safe_load_all(helm("template", "fed", str(ROOT / "charts" / "federator")).stdout)
    [role] = [d for d in rendered if d and d["kind"] == "Role" and d["metadata"]["name"] == "federator-spark"]

    made = {(m, p, w) for agent, m, p, w in api.emulator.requested if agent == "federator-spark"}
    needs = {needed(*request) for request in made}
    assert needs == {("", "configmaps", "list"), ("", "configmaps", "watch")}
    assert needs <= granted(role["rules"])


def test_a_broken_config_is_reported_against_its_configmap_and_the_task_it_held(
    api: KubeServer, watch: ConfigMapWatch
) -> None:
    put(api, "a-task", task("a"))
    reader = ConfigMapReader(watch)
    eventually(lambda: configs(reader) == {source("a-task"): 3}, message="a is listed")
    put(
        api,
        "a-task",
        {**task("a"), "spec": {**task("a")["spec"], "runtime": {"triggerIntervalSeconds": "x"}}},
    )
    status, body = api.request("POST", CONFIGMAPS, configmap("no-key", {"config.json": "{}"}))
    assert status in (200, 201), body

    def broken() -> list[Found]:
        found = reader.read()
        return found if all(item.config is None for item in found) and len(found) == 2 else []

    held, empty = eventually(broken, message="both are reported")
    assert (held.source, held.key) == (source("a-task"), "default/a")
    assert held.error is not None and held.error.startswith("key task.json: invalid task config: ")
    assert "spec.runtime.triggerIntervalSeconds" in held.error
    assert (empty.source, empty.key, empty.error) == (source("no-key"), None, "it has no key 'task.json'")

    remove(api, "a-task")
    eventually(lambda: [item.source for item in reader.read()] == [source("no-key")], message="forgotten")
    put(api, "a-task", "{not json")
    back = eventually(lambda: next((i for i in reader.read() if i.source == source("a-task")), None))
    assert back.key is None  # a ConfigMap that was deleted holds no task when it comes back broken


def two_listed(api: KubeServer, watch: ConfigMapWatch) -> ConfigMapReader:
    """Tasks a and b, listed (trigger interval 3)."""
    put(api, "a-task", task("a"))
    put(api, "b-task", task("b"))
    reader = ConfigMapReader(watch)
    eventually(lambda: configs(reader) == {source("a-task"): 3, source("b-task"): 3}, message="listed")
    return reader


def test_during_an_outage_the_configs_stay_and_the_changes_made_meanwhile_arrive_once_it_is_back(
    api: KubeServer, watch: ConfigMapWatch, proxy: CuttableProxy, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="federator.host")
    reader = two_listed(api, watch)
    both = {source("a-task"): 3, source("b-task"): 3}

    proxy.cut()
    eventually(lambda: "cannot follow them" in caplog.text, message="the outage is noticed")
    put(api, "a-task", task("a", trigger=5))
    remove(api, "b-task")
    put(api, "c-task", task("c"))
    eventually_more(lambda: caplog.text.count("cannot follow them"), 2, message="it retries")
    assert configs(reader) == both  # what the driver runs meanwhile: what it had

    proxy.restore()
    after = {source("a-task"): 5, source("c-task"): 3}
    eventually(lambda: configs(reader) == after, message="the changes arrive")
    assert api.emulator.times("GET", CONFIGMAPS) == 1  # no list: the watch went on from where it was
    assert all(version.isdigit() for version in api.emulator.watches(CONFIGMAPS))  # each from where it was
    assert "the API server answers again" in caplog.text
    assert "a-token" not in caplog.text


def test_a_watch_whose_version_is_gone_lists_again_and_forgets_what_was_deleted_meanwhile(
    api: KubeServer, watch: ConfigMapWatch, proxy: CuttableProxy, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="federator.host")
    reader = two_listed(api, watch)

    proxy.cut()
    remove(api, "b-task")
    put(api, "a-task", task("a", trigger=7))
    emulator = api.emulator
    assert isinstance(emulator, CompactingEmulator)
    emulator.compacted = emulator.resource_version  # the deletion is no longer in the history
    proxy.restore()

    eventually(lambda: configs(reader) == {source("a-task"): 7}, message="listed again")
    assert emulator.times("GET", CONFIGMAPS) == 2
    assert "HTTP 410: too old resource version" in caplog.text
    new_list = str(emulator.resource_version)
    eventually(lambda: emulator.watches(CONFIGMAPS)[-1] == new_list, message="it watches from the new list")


def test_a_bookmark_moves_the_version_a_watch_resumes_from_without_changing_anything() -> None:
    watch = ConfigMapWatch(ApiAccess("http://127.0.0.1:1"), "default", SELECTOR)  # never started
    added = configmap("a-task", {"task.json": "{}"})
    added["metadata"]["resourceVersion"] = "5"
    watch._apply({"type": "ADDED", "object": added})
    assert watch.resource_version == "5"
    bookmark = {"kind": "ConfigMap", "metadata": {"resourceVersion": "42"}}
    watch._apply({"type": "BOOKMARK", "object": bookmark})

    assert watch.resource_version == "42"
    assert list(watch.configmaps()) == ["a-task"]


def test_an_answer_of_410_gone_to_the_watch_itself_means_list_again_too() -> None:
    status = {
        "kind": "Status",
        "code": 410,
        "reason": "Expired",
        "message": "too old resource version: 3 (9)",
    }

    gone = failure(410, json.dumps(status).encode())

    assert isinstance(gone, Expired) and str(gone) == "HTTP 410: too old resource version: 3 (9)"
    assert not isinstance(failure(403, b"forbidden"), Expired)


def test_in_a_pod_the_api_server_and_credentials_come_from_the_environment_and_the_service_account(
    tmp_path: Path,
) -> None:
    (tmp_path / "namespace").write_text("payments\n", encoding="utf-8")
    (tmp_path / "token").write_text("first\n", encoding="utf-8")
    environ = {"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"}

    access = ApiAccess.in_cluster(environ, tmp_path)

    assert (access.url, access.namespace, access.ca_file) == (
        "https://[fd00::1]:443",
        "payments",
        tmp_path / "ca.crt",
    )
    assert access.token() == "first"
    (tmp_path / "token").write_text("rotated\n", encoding="utf-8")  # the kubelet replaced it
    assert access.token() == "rotated"
    with pytest.raises(NotInCluster, match="KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set"):
        ApiAccess.in_cluster({}, tmp_path)


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["--task-configmaps", SELECTOR, "--task-dir", "/tasks"], "no --task-config/--task-dir"),
        (
            ["--task-dir", "/tasks", "--namespace", "payments"],
            "--namespace is the namespace of --task-configmaps",
        ),
    ],
)
def test_the_host_takes_its_configs_from_files_or_from_the_api_server_not_both(
    argv: list[str], error: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        host.main(argv)

    assert exit_.value.code == 2
    assert error in capsys.readouterr().err


def test_outside_a_pod_the_host_says_why_it_cannot_watch_configmaps(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)

    assert host.main(["--task-configmaps", SELECTOR]) == 2
    assert "KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set" in capsys.readouterr().err


def test_over_https_the_driver_trusts_the_clusters_ca_and_sends_the_token_as_it_is_now(
    api: KubeServer, tmp_path: Path
) -> None:
    ca = trustme.CA()
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(tls)
    ca.cert_pem.write_to_path(str(tmp_path / "ca.crt"))
    token = tmp_path / "token"
    token.write_text("first", encoding="utf-8")
    put(api, "a-task", task("a"))
    with CuttableProxy.before(api, tls) as proxy:
        access = ApiAccess(proxy.url, token_file=token, ca_file=tmp_path / "ca.crt")
        listed = access.get_json(CONFIGMAPS, {"labelSelector": SELECTOR}, 10)
        token.write_text("rotated", encoding="utf-8")  # the kubelet replaced it
        access.get_json(CONFIGMAPS, {"labelSelector": SELECTOR}, 10)
        with pytest.raises(ssl.SSLCertVerificationError):  # a server the CA did not sign is refused
            ApiAccess(proxy.url, token_file=token).get_json(CONFIGMAPS, {}, 10)

    assert [item["metadata"]["name"] for item in listed["items"]] == ["a-task"]
    request = f"GET {CONFIGMAPS}?labelSelector=federator.io%2Fapplication%3Dorders HTTP/1.1".encode()
    assert [head.split(b"\r\n")[0] for head in proxy.heads] == [request] * 2
    assert b"Authorization: Bearer first\r\n" in proxy.heads[0]
    assert b"Authorization: Bearer rotated\r\n" in proxy.heads[1]
