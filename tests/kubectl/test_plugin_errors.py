"""Every failure of `kubectl federator` is one line on stderr and a non-zero exit, never a traceback:
whatever the verb, for bad names, bad flags, unreachable, silent and wrong servers, a cluster without
Federator's CRDs, a namespace that does not exist and a missing Graphviz. And a wrong cluster never looks
like an empty one."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from broken_servers import kubeconfig_for, silent_server, uninstall_federator, web_page_server
from plugin_helpers import Plugin, one_line_error
from plugin_seeds import seed_topology

from support.kube import KubeServer

# One invocation of each verb that reads the cluster.
VERBS = {
    "status": ("status",),
    "lag": ("lag",),
    "failover": ("failover", "orders", "--to", "neu", "--yes"),
    "failback": ("failback", "orders", "--yes"),
    "report": ("report", "-o", "{tmp}/bundle.zip"),
    "graph": ("graph",),
}


def verb(name: str, tmp_path: Path) -> list[str]:
    return [arg.replace("{tmp}", str(tmp_path)) for arg in VERBS[name]]


@pytest.mark.parametrize("name", VERBS)
def test_a_silent_api_server_is_one_line_after_the_request_timeout(
    federator: Plugin, tmp_path: Path, name: str
) -> None:
    with silent_server() as url:
        config = kubeconfig_for(tmp_path / "config", url)
        args = [*verb(name, tmp_path), "--kubeconfig", str(config), "--request-timeout=1s"]
        done = federator(*args, check=False, timeout=30)
    one_line_error(done, f"the API server {url} (context x) did not answer within 1s")


@pytest.mark.parametrize("name", VERBS)
def test_a_server_that_is_no_api_server_is_one_line(federator: Plugin, tmp_path: Path, name: str) -> None:
    with web_page_server() as page:
        config = kubeconfig_for(tmp_path / "config", page.url)
        done = federator(*verb(name, tmp_path), "--kubeconfig", str(config), check=False)
    one_line_error(done, page.url, "does not answer as a Kubernetes API server")


@pytest.mark.parametrize("name", VERBS)
def test_a_cluster_without_federators_crds_is_not_an_empty_one(
    kube: KubeServer, federator: Plugin, tmp_path: Path, name: str
) -> None:
    uninstall_federator(kube)
    done = federator(*verb(name, tmp_path), check=False)
    one_line_error(done, "does not serve failovergroups.federator.io/v1alpha1", "CRDs are not installed")


@pytest.mark.parametrize("name", VERBS)
def test_a_namespace_that_does_not_exist_is_named(
    kube: KubeServer, federator: Plugin, tmp_path: Path, name: str
) -> None:
    seed_topology(kube)
    done = federator(*verb(name, tmp_path), "-n", "paymnets", check=False)
    one_line_error(done, "namespace paymnets not found (context kmock)")


def test_an_empty_namespace_is_named_and_draws_no_picture(federator: Plugin) -> None:
    found = federator("status", "-n", "payments").stdout
    kinds = "FailoverGroups, ServiceBusMirrors, ReplicationApplications or ReplicationTasks"
    assert found == f"No {kinds} found in namespace payments.\n"
    assert federator("lag", "-n", "payments").stdout == "No ReplicationTasks found in namespace payments.\n"
    drawn = federator("graph", "-n", "payments")
    assert drawn.stdout == "" and "found in namespace payments: nothing to draw" in drawn.stderr


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("status", "--bogus"), "No such option: --bogus (see 'kubectl federator status --help')"),
        (("lag", "-o", "tree"), "'tree' is not one of"),
        (("status", "pod/x"), "unknown kind 'pod'"),
        (
            ("status", "nope"),
            "no FailoverGroup, ServiceBusMirror, ReplicationApplication or ReplicationTask named nope in "
            "namespace default",
        ),
        (("status", "fg/"), "'fg/' is neither NAME nor KIND/NAME"),
        (("failover", "orders"), "Missing option '--to'"),
        (("failover", "rt/orders", "--to", "neu"), "'rt/orders' is a replicationtask, not a FailoverGroup"),
        (("failback", "nope", "--yes"), "FailoverGroup nope not found in namespace default"),
        (("report", "--tail", "0"), "--tail"),
        (("graph", "--format", "png"), "'png' is not one of"),
        (("status", "--request-timeout", "soon"), "invalid argument 'soon' for --request-timeout"),
        (("status", "--as-group", "admins"), "--as-group and --as-uid need --as"),
        (("lag", "--token"), "flag needs an argument: --token"),
        (("status", "--context", "nope"), "context 'nope' not found"),
        (("status", "--certificate-authority", "/nonexistent/ca.pem", "-s", "https://127.0.0.1:9"), "TLS"),
    ],
)
def test_bad_names_and_flags_are_one_line(
    kube: KubeServer, federator: Plugin, args: tuple[str, ...], expected: str
) -> None:
    seed_topology(kube)
    one_line_error(federator(*args, check=False), expected)


def test_svg_without_graphviz_is_one_line(kube: KubeServer, federator: Plugin) -> None:
    seed_topology(kube)
    only_the_venv = {"PATH": str(Path(sys.executable).parent)}  # kubectl-federator, but no `dot`
    done = federator("graph", "--format", "svg", env=only_the_venv, check=False)
    one_line_error(done, "SVG needs Graphviz's `dot`")
    assert done.stdout == ""
