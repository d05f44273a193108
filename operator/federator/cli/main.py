"""`federator`: one entry point, one function per subcommand, each delegating to its own module."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from federator import __version__

app = typer.Typer(
    name="federator",
    help="Replication topologies between Azure Event Hubs and Service Bus namespaces.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)

Files = Annotated[list[Path], typer.Option("-f", "--filename", help="Manifest file(s); repeat the option.")]


@app.callback(invoke_without_command=True)
def _root(
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.")] = False,
) -> None:
    if version:
        out.print(__version__)
        raise typer.Exit()


@app.command()
def crds(
    output_dir: Annotated[
        Path | None,
        typer.Option("--output-dir", "-o", help="Write one file per CRD here instead of printing."),
    ] = None,
    reference: Annotated[
        Path | None, typer.Option("--reference", help="Also write the Markdown API reference to this file.")
    ] = None,
) -> None:
    """Print (or write) the CustomResourceDefinitions generated from the API models."""
    from federator.crds.generate import render_all
    from federator.crds.reference import render_reference

    if reference is not None:
        reference.write_text(render_reference(), encoding="utf-8")
        err.print(f"wrote {reference}")
    rendered = render_all()
    if output_dir is None:
        sys.stdout.write("---\n".join(rendered.values()))
        return
    output_dir.mkdir(parents=True, exist_ok=True)
    for name, text in rendered.items():
        (output_dir / name).write_text(text, encoding="utf-8")
        err.print(f"wrote {output_dir / name}")


@app.command()
def validate(
    files: Annotated[list[Path], typer.Argument(help="Manifest files (multi-document YAML).")],
    strict: Annotated[
        bool, typer.Option("--strict", help="Fail on warnings too (specs that run, but likely not as meant).")
    ] = False,
) -> None:
    """Check manifests offline as kubectl, the API server (schema, CEL rules), the operator and the Spark
    app would; print every problem and warning with its field path."""
    from federator.cli.report import print_validation
    from federator.validation import validate_files

    outcomes = validate_files(files)
    if not print_validation(outcomes, out, strict=strict):
        raise typer.Exit(code=1)


@app.command()
def render(
    filename: Files,
    launcher: Annotated[
        str | None, typer.Option(help="Override the operator's default launcher: kubeflow or apache.")
    ] = None,
) -> None:
    """Print what the operator would create for the manifests (the GitOps preview)."""
    from federator import plainyaml
    from federator.cli.render import preview_documents
    from federator.settings import OperatorSettings
    from federator.validation.documents import Document, ManifestError, load_documents

    env = dict(os.environ)
    if launcher is not None:
        env["FEDERATOR_LAUNCHER"] = launcher
    try:
        settings = OperatorSettings.from_env(env)
    except ValueError as problem:
        err.print(f"[red]{escape(str(problem))}[/]")
        raise typer.Exit(code=2) from None
    failed = 0
    documents: list[Document] = []
    for path in filename:
        try:
            documents += list(load_documents(path))
        except ManifestError as problem:
            err.print(f"[red]{escape(str(problem))}[/]")
            failed += 1
    # Together: a ReplicationApplication is rendered with its member tasks from any of the files.
    for preview in preview_documents(documents, settings):
        if not preview.ok:
            failed += 1
            err.print(f"[red]{escape(preview.label)}: {preview.reason}[/]: {escape(preview.message or '')}")
            continue
        for warning in preview.warnings:
            err.print(f"[yellow]{escape(preview.label)}: warning[/]: {escape(str(warning))}")
        sys.stdout.write(f"# {preview.label}\n")
        if preview.provisioning is not None:
            plan = plainyaml.dump(preview.provisioning).splitlines()
            sys.stdout.write(f"# {preview.provisioning_title} (not a Kubernetes object):\n")
            sys.stdout.write("".join(f"#   {line}\n" for line in plan))
        sys.stdout.write("---\n".join(plainyaml.dump(o) for o in preview.objects) + "---\n")
    if failed:
        raise typer.Exit(code=1)


@app.command()
def graph(
    filename: Annotated[
        list[Path], typer.Option("-f", "--filename", help="Manifest files or directories; repeat the option.")
    ],
    fmt: Annotated[
        str, typer.Option("--format", help="mermaid (text), svg (needs Graphviz) or dot.")
    ] = "mermaid",
) -> None:
    """Draw the topology of the manifests: namespaces, entities, subscriptions with their rules, tasks and
    their routes, FailoverGroups. Example: federator graph -f examples/ --format svg > topology.svg"""
    from federator.topology.cli import draw_files

    if fmt not in {"mermaid", "svg", "dot"}:
        err.print(f"[red]--format must be mermaid, svg or dot, not {escape(fmt)}[/]")
        raise typer.Exit(code=2)
    raise typer.Exit(code=draw_files(filename, fmt, err))


StateDirOption = Annotated[
    Path,
    typer.Option("--state-dir", help="Checkpoints, logs and emulator data; a second run resumes from here."),
]


@app.command()
def run(
    filename: Files,
    state_dir: StateDirOption = Path(".federator"),
    emulator_config: Annotated[
        Path | None,
        typer.Option(
            "--emulator-config",
            help="Emulator YAML declaring entities with other settings (partition counts...); "
            "what the manifests need besides is added.",
        ),
    ] = None,
    metrics_port: Annotated[
        int | None,
        typer.Option(
            "--metrics-port", help="Serve each task's Prometheus metrics from this port on (+1 per task)."
        ),
    ] = None,
) -> None:
    """Run manifests locally: same validation and planning as the operator, Spark in local mode, the
    built-in emulator wherever a manifest points at it. Ctrl-C stops everything."""
    from federator.local.runner import RunError, run_manifests
    from federator.local.view import output_console

    try:
        code = run_manifests(
            filename,
            state_dir=state_dir,
            emulator_config=emulator_config,
            metrics_port=metrics_port,
            out=output_console(),
            err=err,
        )
    except RunError as problem:
        err.print(f"[red]{escape(str(problem))}[/]")
        raise typer.Exit(code=2) from None
    raise typer.Exit(code=code)


@app.command()
def demo(
    duration: Annotated[float, typer.Option("--duration", help="Seconds of generated traffic.", min=1)] = 60,
    rate: Annotated[float, typer.Option("--rate", help="Events per second.", min=1)] = 200,
    warmup: Annotated[
        float,
        typer.Option(
            "--warmup", help="Seconds of traffic first, while the app warms up (lag reported apart).", min=0
        ),
    ] = 20,
    drain_timeout: Annotated[
        float, typer.Option("--drain-timeout", help="Seconds to wait for the tail to be replicated.", min=1)
    ] = 120,
    summary_json: Annotated[
        Path | None, typer.Option("--summary-json", help="Also write the summary here as JSON.")
    ] = None,
) -> None:
    """Run a small topology on the emulator with generated traffic and print a loss/duplicate summary;
    exits 0 only if nothing was lost."""
    from federator.local.demo import run_demo
    from federator.local.runner import RunError
    from federator.local.view import output_console

    try:
        code = run_demo(
            duration=duration,
            rate=rate,
            drain_timeout=drain_timeout,
            summary_json=summary_json,
            out=output_console(),
            warmup=warmup,
        )
    except RunError as problem:
        err.print(f"[red]{escape(str(problem))}[/]")
        raise typer.Exit(code=2) from None
    raise typer.Exit(code=code)


@app.command()
def drill(
    filename: Files,
    state_dir: StateDirOption = Path(".federator"),
    kill: Annotated[
        bool, typer.Option("--kill", help="Then kill the primary's emulator namespace and fail back.")
    ] = False,
    group: Annotated[
        str | None, typer.Option("--group", help="The FailoverGroup to drill, when the files have several.")
    ] = None,
) -> None:
    """Failover drill in local mode: run the manifests, switch a healthy FailoverGroup to another member
    and back, and print each switch's phases, followers and what it left behind."""
    from federator.local.drillrun import DrillRefused, run_drill

    try:
        faults = run_drill(filename, state_dir, kill=kill, group_name=group, say=out.print)
    except (DrillRefused, TimeoutError) as problem:
        err.print(f"[red]drill refused or stopped:[/] {escape(str(problem))}")
        raise typer.Exit(code=2) from None
    for fault in faults:
        err.print(f"[red]drill failed:[/] {escape(fault)}")
    raise typer.Exit(code=3 if faults else 0)


@app.command()
def emulator(
    config: Annotated[Path, typer.Option("--config", "-c", help="Emulator configuration (YAML).")],
    data_dir: Annotated[
        Path | None, typer.Option("--data-dir", help="Keep messages here across restarts (durable mode).")
    ] = None,
    ready_file: Annotated[
        Path | None, typer.Option("--ready-file", help="Write connection details here (JSON) once ready.")
    ] = None,
) -> None:
    """Run the local Event Hubs + Service Bus emulator in the foreground (SIGTERM stops it)."""
    # The emulator is its own distribution (federator-emulator): this process becomes it.
    argv = [sys.executable, "-m", "federator_emulator", "--config", str(config)]
    argv += ["--data-dir", str(data_dir)] if data_dir is not None else []
    argv += ["--ready-file", str(ready_file)] if ready_file is not None else []
    os.execv(argv[0], argv)


@app.command()
def operator(
    namespace: Annotated[
        list[str] | None,
        typer.Option(
            "--namespace", "-n", help="Watch this namespace (repeat). Env: FEDERATOR_NAMESPACES=a,b."
        ),
    ] = None,
    all_namespaces: Annotated[
        bool,
        typer.Option("--all-namespaces", "-A", help="Watch every namespace. Env: FEDERATOR_ALL_NAMESPACES."),
    ] = False,
    liveness: Annotated[str, typer.Option(help="Liveness endpoint.")] = "http://0.0.0.0:8080/healthz",
    peering: Annotated[
        str | None,
        typer.Option(
            help="kopf peering name, for leader election with replicas > 1. Env: FEDERATOR_PEERING."
        ),
    ] = None,
) -> None:
    """Run the Kubernetes operator (kopf)."""
    from federator.controller import run as run_operator
    from federator.settings import OperatorSettings

    namespaces = namespace or [n for n in os.environ.get("FEDERATOR_NAMESPACES", "").split(",") if n.strip()]
    everywhere = all_namespaces or os.environ.get("FEDERATOR_ALL_NAMESPACES", "").lower() == "true"
    if not namespaces and not everywhere:
        err.print("[red]say what to watch:[/] --namespace NS (repeatable) or --all-namespaces")
        raise typer.Exit(code=2)
    try:
        settings = OperatorSettings.from_env()
    except ValueError as problem:
        err.print(f"[red]{escape(str(problem))}[/]")
        raise typer.Exit(code=2) from None
    run_operator(
        namespaces=[n.strip() for n in namespaces],
        all_namespaces=everywhere,
        liveness_endpoint=liveness,
        peering=peering or os.environ.get("FEDERATOR_PEERING") or None,
        settings=settings,
    )
