"""`kubectl federator`: the on-call engineer's view of Federator in a cluster. kubectl runs this program
(`kubectl-federator` on PATH) with the arguments after `federator`; it reads the same kubeconfig and takes
kubectl's generic options (flags.py).

One function per command, each a few lines: options → the command's module. Every failure, a usage error
included, is one line on stderr and exit code 1, as kubectl's own."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable, Coroutine
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, NoReturn, TypeVar

import typer

from federator import __version__
from federator.kubectl import flags, output
from federator.kubectl.cluster import PluginError
from federator.kubectl.kubeconfig import KubeconfigError, Target, load

_GLOBAL_OPTIONS = (
    "Use 'kubectl federator options' for the options every command takes (--context, --as, --token, "
    "--server, --request-timeout, ...)."
)
app = typer.Typer(
    name="kubectl federator",
    help="Federator for on-call engineers: status, failover and failback, lag, support bundles, topology "
    "pictures. Uses your kubeconfig, like kubectl.",
    epilog=_GLOBAL_OPTIONS,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Plain help, as kubectl's: no boxes, no `<bool>` placeholders, readable at any width.
    rich_markup_mode=None,
)
command = app.command(epilog=_GLOBAL_OPTIONS)
T = TypeVar("T")
_given = flags.ClientOptions()
"""The generic options of this run, taken off the command line by main()."""

Namespace = Annotated[
    str | None,
    typer.Option("--namespace", "-n", metavar="NAME", help="Namespace (default: the context's namespace)."),
]
AllNamespaces = Annotated[bool, typer.Option("--all-namespaces", "-A", help="Every namespace.")]
Reference = Annotated[
    str | None,
    # Described in each command's text: typer lists arguments with a `<str>` type label.
    typer.Argument(metavar="NAME|KIND/NAME", hidden=True, show_default=False),
]
Watch = Annotated[bool, typer.Option("--watch", "-w", help="Keep refreshing until Ctrl-C.")]
Interval = Annotated[
    float,
    typer.Option("--interval", metavar="SECONDS", help="Seconds between refreshes with --watch.", min=0.2),
]


class Format(StrEnum):
    text = "text"
    json = "json"
    yaml = "yaml"


class TableFormat(StrEnum):
    text = "text"
    wide = "wide"
    json = "json"
    yaml = "yaml"


Output = Annotated[Format, typer.Option("--output", "-o", help="text (a tree), json or yaml.")]
TableOutput = Annotated[
    TableFormat, typer.Option("--output", "-o", help="text (a table), wide (every column), json or yaml.")
]
BOOLEAN_FLAGS = {
    "--all-namespaces",
    "-A",
    "--watch",
    "-w",
    "--yes",
    "-y",
    "--no-wait",
    "--planned",
    "--forced",
}


def main() -> None:
    """The `kubectl-federator` entry point: help and errors say `kubectl federator`, as users type it."""
    global _given
    code: Any = 0
    try:
        _given, args = flags.take(sys.argv[1:])
        args = flags.pflag_booleans(args, BOOLEAN_FLAGS)
        code = app(prog_name="kubectl federator", args=args, standalone_mode=False)
    except flags.FlagError as problem:
        _fail(f"{problem} (see 'kubectl federator options')")
    except typer.TyperException as problem:  # a usage error: which command, and where its help is
        where = getattr(getattr(problem, "ctx", None), "command_path", None) or "kubectl federator"
        _fail(f"{problem.format_message()} (see '{where} --help')")
    except typer.Abort:
        code = 130
    sys.exit(code if isinstance(code, int) else 0)


def _fail(message: str) -> NoReturn:
    """One line on stderr and exit code 1: the shape of every failure of the plugin."""
    line = f"[red]error:[/] {output.safe(' '.join(message.split()))}"
    output.console(stderr=True).print(line, soft_wrap=True)
    sys.exit(1)


@app.callback(invoke_without_command=True)
def _root(
    ctx: typer.Context,
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.")] = False,
) -> None:
    if version:
        output.console().print(__version__)
        raise typer.Exit()
    if ctx.invoked_subcommand is None:  # as kubectl: no command shows the help, and is no error
        output.console().print(ctx.get_help(), markup=False, highlight=False)
        raise typer.Exit()


def _run(namespace: str | None, work: Callable[[Target], Coroutine[Any, Any, T]]) -> T:
    """Load the kubeconfig and run one command (its result returned); any failure is one red line and
    exit code 1."""
    try:
        target = load(namespace=namespace, options=_given)
        return asyncio.run(work(target))
    except (KubeconfigError, PluginError) as problem:
        _fail(str(problem))
    except KeyboardInterrupt:
        raise typer.Exit(code=130) from None
    except (typer.Exit, typer.TyperException):
        raise
    except Exception as problem:  # a bug: still one line (FEDERATOR_DEBUG=1 shows the traceback)
        if os.environ.get("FEDERATOR_DEBUG"):
            raise
        _fail(f"unexpected {type(problem).__name__}: {problem} (a bug in kubectl-federator: please report)")


@command
def status(
    reference: Reference = None,
    all_namespaces: AllNamespaces = False,
    namespace: Namespace = None,
    fmt: Output = Format.text,
    watch: Watch = False,
    interval: Interval = 2.0,
) -> None:
    """Trees of FailoverGroups (members, probes, tasks following them, Spark, lag), ServiceBusMirrors
    (members, entities and rules, pairs, tasks) and ReplicationApplications (Spark, the tasks sharing it),
    conditions worst first with their full messages. NAME shows one object and what belongs to it
    (KIND/NAME when kinds share the name: fg/, sbm/, rapp/, rt/).

    \b
    Examples:
      kubectl federator status orders -n payments
      kubectl federator status -A -o yaml
      kubectl federator status sbm/orders --watch
    """
    from federator.kubectl.commands import show_status

    _run(namespace, lambda t: show_status(t, reference, all_namespaces, fmt.value, watch, interval))


@command
def lag(
    all_namespaces: AllNamespaces = False,
    namespace: Namespace = None,
    fmt: TableOutput = TableFormat.text,
    watch: Watch = False,
    interval: Interval = 2.0,
) -> None:
    """How far each ReplicationTask is behind its source (per partition where the status has it), worst
    first.

    \b
    Examples:
      kubectl federator lag -n payments
      kubectl federator lag -A -o wide --watch
    """
    from federator.kubectl.commands import show_lag

    _run(namespace, lambda t: show_lag(t, all_namespaces, fmt.value, watch, interval))


Group = Annotated[str, typer.Argument(metavar="GROUP", hidden=True)]
Yes = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]
Timeout = Annotated[
    float | None,
    typer.Option(
        "--timeout",
        metavar="SECONDS",
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


@command
def failover(
    group: Group,
    to: Annotated[
        str, typer.Option("--to", metavar="MEMBER", help="The member producers and consumers should use.")
    ],
    planned: Planned = False,
    forced: Forced = False,
    yes: Yes = False,
    no_wait: NoWait = False,
    timeout: Timeout = None,
    namespace: Namespace = None,
) -> None:
    """Switch a FailoverGroup to another member: shows what will change (endpoints, tasks that follow,
    replication lag into the member, what a switch now leaves behind), asks, writes the request in one
    patch (spec.activeMember with a new spec.switchRequest) and follows the group until the switch
    completed or failed. To the primary this
    is a failback. Without --planned/--forced the group's spec.switching decides. GROUP: NAME or fg/NAME.

    \b
    Example:
      kubectl federator failover orders --to neu --planned -n payments
    """
    from federator.kubectl.commands import switch

    mode = _switch_mode(planned, forced)
    _run(namespace, lambda t: switch(t, group, to, mode, yes, not no_wait, timeout))


@command
def failback(
    group: Group,
    planned: Planned = False,
    forced: Forced = False,
    yes: Yes = False,
    no_wait: NoWait = False,
    timeout: Timeout = None,
    namespace: Namespace = None,
) -> None:
    """Return a FailoverGroup to its primary: producers first, consumers once the secondary is drained
    (at most the group's drainTimeoutSeconds), with progress. GROUP: NAME or fg/NAME.

    \b
    Example:
      kubectl federator failback orders -n payments
    """
    from federator.kubectl.commands import switch

    mode = _switch_mode(planned, forced)
    _run(namespace, lambda t: switch(t, group, None, mode, yes, not no_wait, timeout))


@command
def drill(
    group: Group,
    yes: Yes = False,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            metavar="SECONDS",
            help="Seconds to wait for each switch's record (default: from the group's probe period, "
            "planned timeout and drain timeout).",
            min=1,
        ),
    ] = None,
    namespace: Namespace = None,
    fmt: Annotated[
        Format, typer.Option("--output", "-o", help="text (a report), json or yaml.")
    ] = Format.text,
) -> None:
    """Rehearse a failover: a planned switch of a FailoverGroup to its next member and back, each waited
    for until the operator's record of it is complete, then a report of each phase's time (detected →
    decided → endpoints published → each follower flowing), the RPO and duplicates. A group not healthy
    enough to drill is refused before anything changes, with the reasons. Exit code 0 passed, 2 refused,
    3 failed (1: any other error). GROUP: NAME or fg/NAME.

    \b
    Example:
      kubectl federator drill orders -n payments --yes
    """
    from federator.kubectl.commands import drill_group

    code = _run(namespace, lambda t: drill_group(t, group, yes, timeout, fmt.value))
    raise typer.Exit(code=code)


@command
def report(
    out: Annotated[
        str | None,
        typer.Option(
            "--output",
            "-o",
            metavar="FILE|DIR|-",
            help="The zip file to write; a directory gets federator-report-<time>.zip; - writes the zip to "
            "standard output. Default: federator-report-<time>.zip here.",
            show_default=False,
        ),
    ] = None,
    all_namespaces: AllNamespaces = False,
    namespace: Namespace = None,
    tail: Annotated[
        int, typer.Option("--tail", metavar="LINES", help="Log lines per container.", min=1)
    ] = 2000,
) -> None:
    """A support bundle: Federator's resources and their children, status, Events, operator and Spark
    driver logs (tail), the operator's metrics, every secret value and connection string redacted.

    \b
    Examples:
      kubectl federator report -n payments -o federator-report.zip
      kubectl federator report -A -o - | ssh support 'cat > bundle.zip'
    """
    from federator.kubectl.commands import write_report

    _run(namespace, lambda t: write_report(t, out, all_namespaces, tail))


class GraphFormat(StrEnum):
    mermaid = "mermaid"
    svg = "svg"
    dot = "dot"


GraphFormatOption = Annotated[GraphFormat, typer.Option("--format", help="mermaid (text), svg or dot.")]


@command
def graph(
    reference: Reference = None,
    filename: Annotated[
        list[Path] | None,
        typer.Option("-f", "--filename", metavar="FILE|DIR", help="Draw manifests instead of the cluster."),
    ] = None,
    fmt: GraphFormatOption = GraphFormat.mermaid,
    all_namespaces: AllNamespaces = False,
    namespace: Namespace = None,
) -> None:
    """The topology as a picture: namespaces, entities, subscriptions with their rules, tasks and their
    routes, FailoverGroups. Mermaid text, SVG (Graphviz) or DOT on stdout. NAME (or KIND/NAME) draws
    one object and what belongs to it.

    \b
    Examples:
      kubectl federator graph -n payments --format svg > topology.svg
      kubectl federator graph fg/orders
      kubectl federator graph -f examples/failover-group.yaml
    """
    from federator.kubectl.commands import draw
    from federator.topology.cli import draw_files

    if filename:
        raise typer.Exit(code=min(draw_files(filename, fmt.value), 1))
    _run(namespace, lambda t: draw(t, reference, all_namespaces, fmt.value))


@app.command()
def options() -> None:
    """The options every command takes: kubectl's generic client options."""
    sys.stdout.write(flags.describe())
