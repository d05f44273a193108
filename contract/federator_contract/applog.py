"""The lines the replication app logs that local mode reads back (it watches the app's log file to tell
a started task from one that failed): written by the app, matched by local mode, defined once here."""

from __future__ import annotations


def started_marker(namespace: str, name: str) -> str:
    """Logged once a task's streaming query runs; the query's id and `)` follow."""
    return f"task {namespace}/{name} started (query "


def failed_marker(namespace: str, name: str) -> str:
    """Logged by an application running several tasks when one task's query fails; the error follows."""
    return f"task {namespace}/{name} failed: "
