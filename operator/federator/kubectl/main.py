"""`kubectl federator`: the on-call engineer's view of Federator in a cluster. kubectl runs this program
(`kubectl-federator` on PATH) with the arguments after `federator`; it reads the same kubeconfig.

One function per command, each a few lines: connection options → the command's module."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from federator import __version__
from federator.kubectl import output
from federator.kubectl.cluster import PluginError
from federator.kubectl.kubeconfig import KubeconfigError, Target, load

app = typer.Typer(
    name="kubectl federator",
    help="Federator for on-call engineers: status, failover and failback, lag, support bundles, topology "
    "pictures. Uses your kubeconfig, like kubectl.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)
T = TypeVar("T")

Namespace = Annotated[
    str | None, typer.Option("--namespace", "-n", help="Namespace (default: the context's namespace).")
]
AllNamespaces = Annotated[bool, typer.Option("--all-namespaces", "-A", help="Every namespace.")]
Context = Annotated[
    str | None, typer.Option("--context", help="kubeconfig context (default: the current one).")
]
Kubeconfig = Annotated[
    Path | None, typer.Option("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config).")
]
Reference = Annotated[
    str | None, typer.Argument(metavar="[KIND/NAME]", help="fg/NAME, sbm/NAME or rt/NAME; default: all.")
]
Watch = Annotated[bool, typer.Option("--watch", "-w", help="Keep refreshing until Ctrl-C.")]
Interval = Annotated[
    float, typer.Option("--interval", help="Seconds between refreshes with --watch.", min=0.2)
]


class Format(StrEnum):
    text = "text"
    json = "json"
    yaml = "yaml"


Output = Annotated[Format, typer.Option("--output", "-o", help="text (a tree), json or yaml.")]


def main() -> None:
    """The `kubectl-federator` entry point: help and errors say `kubectl federator`, as users type it."""
    app(prog_name="kubectl federator")


@app.callback(invoke_without_command=True)
def _root(
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.")] = False,
) -> None:
    if version:
        output.console().print(__version__)
        raise typer.Exit()


def _run(
    kubeconfig: Path | None,
    context: str | None,
    namespace: str | None,
    work: Callable[[Target], Coroutine[Any, Any, T]],
) -> T:
    """Load the kubeconfig and run one command; a failure is one red line and exit code 1."""
    try:
        target = load(kubeconfig, context, namespace)
        return asyncio.run(work(target))
    except (KubeconfigError, PluginError) as problem:
        output.console(stderr=True).print(f"[red]error:[/] {output.safe(problem)}")
        raise typer.Exit(code=1) from None
    except KeyboardInterrupt:
        raise typer.Exit(code=130) from None


@app.command()
def status(
    reference: Reference = None,
    all_namespaces: AllNamespaces = False,
    namespace: Namespace = None,
    fmt: Output = Format.text,
    watch: Watch = False,
    interval: Interval = 2.0,
    context: Context = None,
    kubeconfig: Kubeconfig = None,
) -> None:
    """Trees of FailoverGroups (members, probes, tasks following them, Spark, lag) and ServiceBusMirrors
    (members, entities and rules, pairs, tasks), conditions worst first with their full messages.

    [bold]Examples:[/]

      kubectl federator status fg/orders -n payments

      kubectl federator status -A -o yaml

      kubectl federator status sbm/orders --watch
    """
    from federator.kubectl.commands import show_status

    _run(
        kubeconfig,
        context,
        namespace,
        lambda t: show_status(t, reference, all_namespaces, fmt.value, watch, interval),
    )


@app.command()
def lag(
    all_namespaces: AllNamespaces = False,
    namespace: Namespace = None,
    fmt: Output = Format.text,
    watch: Watch = False,
    interval: Interval = 2.0,
    context: Context = None,
    kubeconfig: Kubeconfig = None,
) -> None:
    """How far each ReplicationTask is behind its source (per partition where the status has it), worst
    first.

    [bold]Examples:[/]

      kubectl federator lag -n payments

      kubectl federator lag -A --watch
    """
    from federator.kubectl.commands import show_lag

    _run(kubeconfig, context, namespace, lambda t: show_lag(t, all_namespaces, fmt.value, watch, interval))


Yes = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]
Timeout = Annotated[
    float | None,
    typer.Option(
        "--timeout",
        help="Seconds to follow the switch (default: from the group's probe period and drain timeout).",
        min=1,
    ),
]
NoWait = Annotated[bool, typer.Option("--no-wait", help="Request the switch and return at once.")]
Planned = Annotated[
    bool,
    typer.Option(
        "--planned",
        help="Wait until the replication into the member has caught up (at most the group's "
        "plannedTimeoutSeconds), then switch: sets spec.switching.planned=true.",
    ),
]
Forced = Annotated[
    bool,
    typer.Option(
        "--forced",
        help="Switch at once, leaving behind what is not copied yet (also forces a planned switch that is "
        "waiting): sets spec.switching.planned=false.",
    ),
]


def _switch_mode(planned: bool, forced: bool) -> bool | None:
    if planned and forced:
        raise typer.BadParameter("--planned and --forced exclude each other")
    return True if planned else False if forced else None


@app.command()
def failover(
    group: Annotated[str, typer.Argument(metavar="GROUP", help="The FailoverGroup.")],
    to: Annotated[str, typer.Option("--to", help="The member producers and consumers should use.")],
    planned: Planned = False,
    forced: Forced = False,
    yes: Yes = False,
    no_wait: NoWait = False,
    timeout: Timeout = None,
    namespace: Namespace = None,
    context: Context = None,
    kubeconfig: Kubeconfig = None,
) -> None:
    """Switch a FailoverGroup to another member: shows what will change (endpoints, tasks that follow,
    replication lag into the member, what a switch now leaves behind), asks, sets the manual switch
    (spec.activeMember) and follows the group until the switch completed or failed. To the primary this
    is a failback. Without --planned/--forced the group's spec.switching decides.

    [bold]Example:[/]

      kubectl federator failover orders --to neu --planned -n payments
    """
    from federator.kubectl.commands import switch

    mode = _switch_mode(planned, forced)
    _run(kubeconfig, context, namespace, lambda t: switch(t, group, to, mode, yes, not no_wait, timeout))


@app.command()
def failback(
    group: Annotated[str, typer.Argument(metavar="GROUP", help="The FailoverGroup.")],
    planned: Planned = False,
    forced: Forced = False,
    yes: Yes = False,
    no_wait: NoWait = False,
    timeout: Timeout = None,
    namespace: Namespace = None,
    context: Context = None,
    kubeconfig: Kubeconfig = None,
) -> None:
    """Return a FailoverGroup to its primary: producers first, consumers once the secondary is drained
    (at most the group's drainTimeoutSeconds), with progress.

    [bold]Example:[/]

      kubectl federator failback orders -n payments
    """
    from federator.kubectl.commands import switch

    mode = _switch_mode(planned, forced)
    _run(kubeconfig, context, namespace, lambda t: switch(t, group, None, mode, yes, not no_wait, timeout))


@app.command()
def report(
    out: Annotated[Path, typer.Option("--output", "-o", help="The zip file to write.")],
    all_namespaces: AllNamespaces = False,
    namespace: Namespace = None,
    tail: Annotated[int, typer.Option("--tail", help="Log lines per container.", min=1)] = 2000,
    context: Context = None,
    kubeconfig: Kubeconfig = None,
) -> None:
    """A support bundle: Federator's resources and their children, status, Events, operator and Spark
    driver logs (tail), the operator's metrics, every secret value and connection string redacted.

    [bold]Example:[/]

      kubectl federator report -n payments -o federator-report.zip
    """
    from federator.kubectl.commands import write_report

    _run(kubeconfig, context, namespace, lambda t: write_report(t, out, all_namespaces, tail))


class GraphFormat(StrEnum):
    mermaid = "mermaid"
    svg = "svg"
    dot = "dot"


GraphFormatOption = Annotated[GraphFormat, typer.Option("--format", help="mermaid (text), svg or dot.")]


@app.command()
def graph(
    reference: Reference = None,
    filename: Annotated[
        list[Path] | None, typer.Option("-f", "--filename", help="Draw manifests instead of the cluster.")
    ] = None,
    fmt: GraphFormatOption = GraphFormat.mermaid,
    all_namespaces: AllNamespaces = False,
    namespace: Namespace = None,
    context: Context = None,
    kubeconfig: Kubeconfig = None,
) -> None:
    """The topology as a picture: namespaces, entities, subscriptions with their rules, tasks and their
    routes, FailoverGroups. Mermaid text, SVG (Graphviz) or DOT on stdout.

    [bold]Examples:[/]

      kubectl federator graph -n payments --format svg > topology.svg

      kubectl federator graph fg/orders

      kubectl federator graph -f examples/failover-group.yaml
    """
    from federator.kubectl.commands import draw
    from federator.topology.cli import draw_files

    if filename:
        raise typer.Exit(code=draw_files(filename, fmt.value))
    _run(kubeconfig, context, namespace, lambda t: draw(t, reference, all_namespaces, fmt.value))
