"""What a Python process Spark starts for the app costs before it does anything: it imports PySpark from
its archive as bytecode, not by compiling every module again (``federator_spark/worker_archive.py``; an
archive whose source changed still runs its source), and the process a query starts for its Event Hubs
source imports none of the task's models."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from pyspark import cloudpickle

from federator_contract.checkpoints import CheckpointLayout
from federator_spark import datasources, worker_archive
from federator_spark.connections import Connection
from federator_spark.sources.eventhubs_settings import HubSourceSettings
from federator_spark.sources.servicebus_settings import SourceSettings

MODULE = "def answer():\n    raise RuntimeError('from the source')\n"
REPORTED = "try: pkg.mod.answer()\nexcept: traceback.print_exc()"  # as a worker reports a task's error


def archive(tmp_path: Path, files: dict[str, str]) -> Path:
    path = tmp_path / "pkg.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zipped:
        for name, text in files.items():
            zipped.writestr(name, text)
    return path


def run(path: Path, code: str) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh interpreter with ``path`` first on its path, as Spark starts its workers."""
    env = {"PYTHONPATH": str(path), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)


def replace_entry(path: Path, name: str, content: str | bytes) -> None:
    with zipfile.ZipFile(path) as zipped:
        entries = {entry: zipped.read(entry) for entry in zipped.namelist() if entry != name}
    with zipfile.ZipFile(path, "w") as zipped:
        for entry_name, data in entries.items():
            zipped.writestr(entry_name, data)
        zipped.writestr(name, content)


def test_modules_are_imported_from_their_bytecode_and_tracebacks_name_their_source(tmp_path: Path) -> None:
    path = archive(tmp_path, {"pkg/__init__.py": "", "pkg/mod.py": MODULE})
    assert not worker_archive.compiled(path)

    assert worker_archive.compile_archive(path) == 2
    assert worker_archive.compiled(path)

    # The traceback module reads the lines through the archive's loader.
    result = run(path, "import pkg.mod, traceback\nprint(pkg.mod.__file__)\n" + REPORTED)
    assert result.stdout.strip() == f"{path}/pkg/mod.pyc"
    assert f'File "{path}/pkg/mod.py", line 2, in answer' in result.stderr
    assert "raise RuntimeError('from the source')" in result.stderr
    with zipfile.ZipFile(path) as zipped:
        assert {"pkg/__init__.py", "pkg/mod.py", "pkg/__init__.pyc", "pkg/mod.pyc"} == set(zipped.namelist())


def test_a_source_changed_after_compiling_runs_as_changed(tmp_path: Path) -> None:
    path = archive(tmp_path, {"pkg/__init__.py": "", "pkg/mod.py": MODULE})
    worker_archive.compile_archive(path)

    replace_entry(path, "pkg/mod.py", "def answer():\n    return 'changed'\n")

    result = run(path, "import pkg.mod; print(pkg.mod.__file__, pkg.mod.answer())")
    assert result.stdout.split() == [f"{path}/pkg/mod.py", "changed"]


def test_bytecode_of_another_python_is_replaced(tmp_path: Path) -> None:
    path = archive(tmp_path, {"pkg/__init__.py": "", "pkg/mod.py": MODULE})
    worker_archive.compile_archive(path)
    with zipfile.ZipFile(path) as zipped:
        stale = b"\x00\x00\r\n" + zipped.read("pkg/__init__.pyc")[4:]
    replace_entry(path, "pkg/__init__.pyc", stale)
    assert not worker_archive.compiled(path)

    worker_archive.compile_archive(path)

    assert worker_archive.compiled(path)
    assert run(path, "import pkg; print(pkg.__file__)").stdout.strip() == f"{path}/pkg/__init__.pyc"


def test_test_suites_and_what_does_not_compile_stay_sources_only(tmp_path: Path) -> None:
    path = archive(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/tests/test_mod.py": "def test(): pass\n",
            "pkg/testing/utils.py": "",
            "pkg/py2.py": "print 'python 2'\n",
        },
    )

    assert worker_archive.compile_archive(path) == 1

    with zipfile.ZipFile(path) as zipped:
        assert [name for name in zipped.namelist() if name.endswith(".pyc")] == ["pkg/__init__.pyc"]


def test_the_command_compiles_once_and_then_leaves_the_archive_alone(tmp_path: Path) -> None:
    path = archive(tmp_path, {"pkg/__init__.py": "", "pkg/mod.py": MODULE})
    path.chmod(0o644)

    assert worker_archive.main([str(path)]) == 0
    first = path.stat()
    assert worker_archive.main([str(path)]) == 0

    assert path.stat().st_mtime_ns == first.st_mtime_ns and path.stat().st_ino == first.st_ino
    assert first.st_mode & 0o777 == 0o644
    assert worker_archive.main([str(tmp_path / "missing.zip")]) == 1


def test_sparks_python_workers_here_import_pyspark_as_bytecode(spark: Any) -> None:
    """``./dev setup`` compiled this environment's archive (the Spark image's build does the same)."""
    assert worker_archive.compiled(worker_archive.default_archive())

    [origin] = spark.sparkContext.parallelize([0], 1).map(lambda _: __import__("pyspark").__file__).collect()

    assert origin == str(worker_archive.default_archive() / "pyspark" / "__init__.pyc")


SOURCE_PROCESSES = {
    "event hubs": "import federator_spark.sources.eventhubs_slices",
    "service bus": (
        "from federator_spark.sources.servicebus import ServiceBusStreamReader\n"
        "from federator_spark.sources.servicebus_settings import SourceSettings\n"
        "ServiceBusStreamReader(SourceSettings.from_options({'connection': '{\"connection_string\": \"x\"}',"
        " 'queueName': 'q', 'checkpointLocation': 'file:///tmp/checkpoint'}))"
    ),
}


@pytest.mark.parametrize("source", SOURCE_PROCESSES)
def test_a_source_process_imports_none_of_the_tasks_models(source: str) -> None:
    """Spark starts a fresh Python process for each query's source; the task's models (pydantic) cost it
    a third to half a second of imports, and a source needs none of them (``planning.connection_for``; the
    checkpoint location's rules in ``federator_contract.checkpoints``)."""
    models = ("pydantic", "federator_contract.api", "federator_spark.plan")
    code = (
        f"import sys, federator_spark.datasources\n{SOURCE_PROCESSES[source]}\n"
        f"print(sorted(m for m in sys.modules if m.startswith({models!r})))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


BOUND_SOURCES = {
    "event hubs": HubSourceSettings(Connection(connection_string="x"), "orders"),
    "service bus": SourceSettings(
        Connection(connection_string="x"),
        "q",
        None,
        None,
        False,
        10,
        CheckpointLayout(Path("/tmp/checkpoint")),
    ),
}


@pytest.mark.parametrize("source", BOUND_SOURCES)
def test_a_tasks_bound_source_reaches_its_process_without_the_tasks_models(
    source: str, tmp_path: Path
) -> None:
    """What a task's source reads travels with its class (``datasources.bind``), as light as the options
    it replaces: the process Spark starts afresh at every query start (its streaming source runner) imports
    none of the models, nor the SQL engine editors read events with (``event_messages``): it plans batches
    and never reads an event."""
    bound = datasources.bound(datasources.SliceDataSource, "shop/orders", source=BOUND_SOURCES[source])
    pickled = tmp_path / "source.pickle"
    pickled.write_bytes(cloudpickle.dumps(bound))
    models = (
        "pydantic",
        "federator_contract.api",
        "federator_spark.plan",
        "federator_contract.sql",
        "federator_spark.event_messages",
    )
    code = (
        "import pickle, sys, pyspark.sql.streaming.python_streaming_source_runner\n"
        f"source = pickle.loads(open({str(pickled)!r}, 'rb').read())\n"
        "reader = source(options={}).streamReader(None)\n"
        f"print(type(reader).__name__, sorted(m for m in sys.modules if m.startswith({models!r})))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)

    assert result.returncode == 0, result.stderr
    expected = "EventHubsSliceReader" if source == "event hubs" else "ServiceBusSliceReader"
    assert result.stdout.strip() == f"{expected} []"
