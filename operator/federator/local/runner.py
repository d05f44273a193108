"""`federator run`: plan the manifests, start what they need, show the live view until Ctrl-C (SIGINT) or
SIGTERM, then stop everything. A second signal stops without waiting for running batches."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

import yaml
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from federator.local.model import LocalPlan
from federator.local.observe import blocked_row
from federator.local.plan import plan_local_run
from federator.local.session import LocalEnvironmentError, LocalSession, check_replication_app
from federator.local.state import StateDir, StateDirBusy
from federator.local.supervisor import reap_leftovers
from federator.local.view import LiveView, task_table
from federator.validation.documents import Document, ManifestError, load_documents
from federator_contract.emulatorconfig import EmulatorConfig

REFRESH_SECONDS = 0.5


class RunError(RuntimeError):
    """The run cannot start at all (exit code 2)."""


@contextmanager
def stop_signals(wakeup: threading.Event | None = None) -> Iterator[tuple[threading.Event, threading.Event]]:
    """(stop, hurry): the first SIGINT/SIGTERM sets ``stop``, a second one ``hurry`` as well; each sets
    ``wakeup`` too, so that a supervisor waiting on it stops at once."""
    stop, hurry = threading.Event(), threading.Event()

    def handle(_signum: int, _frame: FrameType | None) -> None:
        if stop.is_set():
            hurry.set()
        stop.set()
        if wakeup is not None:
            wakeup.set()

    previous = {sig: signal.signal(sig, handle) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop, hurry
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def load_emulator_config(path: Path | None) -> EmulatorConfig | None:
    if path is None:
        return None
    try:
        return EmulatorConfig.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, ValidationError) as problem:
        raise RunError(f"--emulator-config {path}: {problem}") from None


def load_manifests(files: Sequence[Path], err: Console) -> tuple[list[Document], bool]:
    """Every document of the files, and whether a file could not be read (reported on ``err``)."""
    documents: list[Document] = []
    unreadable = False
    for path in files:
        try:
            documents += load_documents(path)
        except ManifestError as problem:
            err.print(f"[red]{escape(str(problem))}[/]")
            unreadable = True
    return documents, unreadable


def print_notes(plan: LocalPlan, console: Console) -> None:
    for note in plan.notes:
        style = "yellow" if note.failed else "dim"
        console.print(f"[{style}]{escape(note.label)}: {escape(note.message)}[/]")


def run_manifests(
    files: Sequence[Path],
    *,
    state_dir: Path,
    emulator_config: Path | None,
    metrics_port: int | None,
    out: Console,
    err: Console,
) -> int:
    """The `federator run` command; returns the exit code (0: everything ran until stopped)."""
    documents, unreadable = load_manifests(files, err)
    state = StateDir(state_dir)
    plan = plan_local_run(
        documents,
        state=state,
        environ=os.environ,
        emulator_config=load_emulator_config(emulator_config),
        metrics_port=metrics_port,
    )
    print_notes(plan, out)
    if not plan.runnable and plan.emulator is None:
        out.print(task_table([blocked_row(b) for b in plan.blocked]))
        err.print("[red]nothing to run[/]")
        return 1
    session = run_session(plan, state, out)
    return 1 if session.failed or unreadable else 0


def run_session(
    plan: LocalPlan,
    state: StateDir,
    out: Console,
    work: Callable[[LocalSession, LiveView, threading.Event], None] | None = None,
) -> LocalSession:
    """Start the plan's processes, show them until a signal (or until ``work`` returns, when given), then
    stop them all. Raises RunError when the run cannot start."""
    if plan.tasks or plan.following:
        try:
            check_replication_app()
        except LocalEnvironmentError as problem:
            raise RunError(str(problem)) from None
    try:
        lock = state.lock()
    except StateDirBusy as problem:
        raise RunError(str(problem)) from None
    for left in reap_leftovers(state.processes):
        out.print(f"stopped {left}, left running by an earlier run that was killed")
    session = LocalSession(plan, state, os.environ)
    with lock, stop_signals(session.wakeup) as (stop, hurry), LiveView(out) as view:
        try:
            session.start(stop)
            if work is not None:
                work(session, view, stop)
            else:
                supervise(session, view, stop)
        finally:
            view.update(session.rows(), ["stopping ..."])
            session.stop(hurry)
            view.update(session.rows(), session.caption())
    return session


def supervise(
    session: LocalSession, view: LiveView, stop: threading.Event, caption: Sequence[str] = ()
) -> None:
    """Refresh the view until ``stop`` is set or nothing is left running. A group's switch (or a signal)
    wakes it at once: the tasks following the group are planned again now, not at the next refresh."""
    while True:
        session.wakeup.clear()  # before the pass: a switch during it starts the next one at once
        session.reconcile()
        view.update(session.rows(), [*caption, *session.caption()])
        if stop.is_set() or not session.running():
            return
        session.wakeup.wait(REFRESH_SECONDS)
