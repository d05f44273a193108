"""`kubectl federator` behaves as kubectl does: tables keep every column at any width (`-o wide` for more),
kubectl's generic options work on every command, names are taken bare or as KIND/NAME, the prompt takes
yes and no, and help is plain text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trustme
import yaml
from broken_servers import kubeconfig_for, web_page_server
from plugin_helpers import Plugin, create
from plugin_seeds import following_task, group, plain_task, ready, seed_topology, task_status

from support.kube import KubeServer

NARROW = {"COLUMNS": "80", "NO_COLOR": "1"}


def rows(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines()]


def test_lag_keeps_every_column_whole_at_80_columns(kube: KubeServer, federator: Plugin) -> None:
    seed_topology(kube)
    table = federator("lag", env=NARROW).stdout
    assert "…" not in table
    assert rows(table)[0] == ["TASK", "PARTITION", "LAG", "BEHIND", "LAST", "BATCH", "STATE"]
    assert [r[:3] for r in rows(table)[1:]] == [
        ["slow", "all", "95.0s"],
        ["archive", "all", "12.5s"],
        ["billing-west-east", "all", "0.8s"],
        ["broken", "all", "—"],
    ]
    assert all(line == line.rstrip() for line in table.splitlines()), "no trailing blanks"
    wide = federator("lag", "-o", "wide", env=NARROW).stdout
    assert rows(wide)[0][-3:] == ["SOURCE", "STATE", "REASON"] and "REPLICATED" in rows(wide)[0]
    assert rows(wide)[2][-3:] == ["neu", "Ready", "Running"] and "4,200" in rows(wide)[2]
    assert rows(wide)[4][-2:] == ["Stalled", "SecretNotFound"]
    every = federator("lag", "-A", env=NARROW).stdout
    assert rows(every)[0][:2] == ["NAMESPACE", "TASK"]
    assert rows(every)[1][:4] == ["default", "slow", "all", "95.0s"]


def test_a_long_task_name_runs_on_rather_than_being_cut(kube: KubeServer, federator: Plugin) -> None:
    name = "orders-replication-from-west-europe-to-north-europe-archive-" + "x" * 20
    create(kube, plain_task(name), task_status(1.5, 10, ready("Running")))
    line = rows(federator("lag", env=NARROW).stdout)[1]
    assert line[:3] == [name, "all", "1.5s"] and line[-1] == "Ready"


def test_the_generic_options_of_kubectl(kube: KubeServer, federator: Plugin, tmp_path: Path) -> None:
    seed_topology(kube)
    # --server and --token on their own: the kubeconfig names a dead server and no credentials.
    config = kubeconfig_for(tmp_path / "dead", "http://127.0.0.1:9", token=None)
    done = federator("status", "rt/slow", "--kubeconfig", str(config), "-s", kube.url, "--token=sekrit")
    assert "ReplicationTask default/slow" in done.stdout
    assert last_headers(kube)["Authorization"] == "Bearer sekrit"
    # --as / --as-group / --as-uid anywhere on the line: client-go's impersonation headers, one per group.
    impersonating = ["--as", "alice", "--as-group=oncall", "--as-group", "sre", "--as-uid=42"]
    federator("lag", *impersonating[:2], "-o", "json", *impersonating[2:])
    assert last_headers(kube)["Impersonate-User"] == "alice"
    with web_page_server() as page:  # it keeps repeated headers apart
        federator("lag", "--server", page.url, *impersonating, check=False)
    sent = page.seen[-1]
    assert sent.get_all("Impersonate-User") == ["alice"] and sent.get_all("Impersonate-Uid") == ["42"]
    assert sent.get_all("Impersonate-Group") == ["oncall", "sre"]
    # --cluster and --user pick other entries of the kubeconfig than the context's.
    two = yaml.safe_load(kubeconfig_for(tmp_path / "two", "http://127.0.0.1:9").read_text())
    two["clusters"].append({"name": "live", "cluster": {"server": kube.url}})
    two["users"].append({"name": "bob", "user": {"token": "bobs-token"}})
    (tmp_path / "two").write_text(yaml.safe_dump(two))
    flags = ["--kubeconfig", str(tmp_path / "two"), "--cluster", "live", "--user", "bob"]
    assert json.loads(federator("lag", *flags, "-o", "json").stdout)[0]["task"] == "slow"
    assert last_headers(kube)["Authorization"] == "Bearer bobs-token"
    # kubectl's spelling of booleans and the documented list of options.
    federator("status", "--insecure-skip-tls-verify=false", "-A=true", "--request-timeout", "5")
    listed = federator("options").stdout
    for flag in (
        "--as=",
        "--as-group=",
        "--token=",
        "-s, --server=",
        "--certificate-authority=",
        "--insecure-skip-tls-verify:",
        "--request-timeout=",
        "--user=",
        "--cluster=",
    ):
        assert flag in listed, flag


def test_tls_options(federator: Plugin, tmp_path: Path) -> None:
    """--certificate-authority and --insecure-skip-tls-verify against an HTTPS server of the test's own CA:
    reached (it answers with a web page), or refused at the TLS handshake, in one line."""
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    with web_page_server(ca) as page:
        config = str(kubeconfig_for(tmp_path / "config", page.url))
        unknown = federator("lag", "--kubeconfig", config, check=False)
        trusted = federator(
            "lag", "--kubeconfig", config, "--certificate-authority", str(tmp_path / "ca.pem"), check=False
        )
        insecure = federator("lag", "--kubeconfig", config, "--insecure-skip-tls-verify", check=False)
    assert unknown.returncode == 1 and "certificate verify failed" in unknown.stderr
    for reached in (trusted, insecure):
        assert (
            reached.stderr.count("\n") == 1 and "does not answer as a Kubernetes API server" in reached.stderr
        )
    assert len(page.seen) == 2


def last_headers(kube: KubeServer):  # type: ignore[no-untyped-def]
    """The headers of the last request the plugin made."""
    requests = kube.call(lambda: list(kube.emulator))
    mine = [r for r in requests if r.headers.get("User-Agent", "").startswith("kubectl-federator/")]
    return mine[-1].headers


def test_objects_are_named_bare_or_as_kind_slash_name(kube: KubeServer, federator: Plugin) -> None:
    seed_topology(kube)
    bare = json.loads(federator("status", "orders", "-o", "json").stdout)
    assert [g["name"] for g in bare["failoverGroups"]] == ["orders"]
    assert (
        json.loads(federator("status", "slow", "-o", "json").stdout)["replicationTasks"][0]["name"] == "slow"
    )
    create(kube, plain_task("orders"), task_status(1.0, 1, ready("Running")))
    done = federator("status", "orders", check=False)
    assert (
        done.returncode == 1
        and "orders is ambiguous: fg/orders in namespace default, rt/orders" in done.stderr
    )
    planned = federator("failover", "fg/orders", "--to", "weu", "--no-wait", "--yes")
    assert "Fail back FailoverGroup default/orders" in planned.stdout


@pytest.mark.parametrize(
    ("answer", "changed"), [("yes\n", True), ("Y\n", True), ("no\n", False), ("\n", False)]
)
def test_the_prompt_takes_yes_and_no(kube: KubeServer, federator: Plugin, answer: str, changed: bool) -> None:
    create(
        kube,
        group(),
        {"phase": "Normal", "producerMember": "weu", "consumerMember": "weu", "conditions": ready("Active")},
    )
    create(kube, following_task())
    done = federator("failover", "orders", "--to", "neu", "--no-wait", input="maybe\n" + answer, check=False)
    assert "Proceed? [y/N]: Please answer yes or no." in done.stdout
    assert (done.returncode == 0) is changed, done.stderr
    spec = kube.request("GET", "/apis/federator.io/v1alpha1/namespaces/default/failovergroups/orders")[1][
        "spec"
    ]
    assert (spec.get("activeMember") == "neu") is changed


@pytest.mark.parametrize("command", ["status", "lag", "failover", "failback", "report", "graph"])
def test_help_is_plain_text_that_fits_80_columns(federator: Plugin, command: str) -> None:
    text = federator(command, "--help", env=NARROW).stdout
    assert not set(text) & set("╭╮╰╯│─"), "no boxes"
    assert not any(label in text for label in ("<bool>", "<str>", "<float", "<int>", "<path>"))
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "kubectl federator options" in text, "where the generic options are listed"
    if command == "lag":
        assert "text (a table), wide (every column), json or yaml" in " ".join(text.split())
