"""`graph -f FILES|DIRS` (both CLIs): manifests validated as the API server would, then drawn."""

from __future__ import annotations

import sys
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from federator.topology.build import build
from federator.topology.render import GraphvizMissing, render
from federator.validation import check_document
from federator.validation.documents import ManifestError, load_documents


def manifest_files(paths: list[Path]) -> list[Path]:
    """Files as given; a directory stands for its `*.yaml` / `*.yml` files, sorted."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found += sorted(p for p in path.iterdir() if p.suffix in {".yaml", ".yml"} and p.is_file())
        else:
            found.append(path)
    return found


def draw_files(paths: list[Path], fmt: str, err: Console | None = None) -> int:
    """Print the picture of every Federator resource in the files; exit code 1 if any is invalid (then
    nothing is drawn: a picture of a topology the cluster would refuse would mislead)."""
    err = err or Console(stderr=True, soft_wrap=True)
    objects, failed = [], 0
    for path in manifest_files(paths):
        try:
            documents = list(load_documents(path))
        except ManifestError as problem:
            err.print(f"[red]{escape(str(problem))}[/]")
            failed += 1
            continue
        for doc in documents:
            verdict = check_document(doc)
            if verdict.problems:
                failed += 1
                detail = "; ".join(str(p) for p in verdict.problems)
                err.print(f"[red]{escape(doc.label)}[/]: " + escape(detail))
            elif verdict.admitted is not None:
                objects.append(verdict.admitted)  # as the cluster stores it: nulls pruned, defaults set
    if failed:
        return 1
    try:
        sys.stdout.write(render(build(objects), fmt))
    except GraphvizMissing as problem:
        err.print(f"[red]{escape(str(problem))}[/]")
        return 2
    return 0
