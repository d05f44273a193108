"""What the app's Python daemons do so that a fresh worker is cheap and a busy one small
(``worker_daemon``): a worker's first use re-reads no zip archive, and the tasks' workers hold few ``malloc``
arenas (docs/replication.md, "Memory of one application")."""

from __future__ import annotations

import subprocess
import sys

from federator_spark import spark_settings
from federator_spark.worker_daemon import TASK_MALLOC_ARENAS

PYSPARK_ZIP = spark_settings.spark_home() / "python" / "lib" / "pyspark.zip"

# Spark puts PySpark's zip archive first on a worker's path; a worker's first use adds Spark's files
# directory and invalidates the import caches (``setup_spark_files``). Counted: how many times a zip archive's
# directory is read again then.
FIRST_USE = f"""
import sys, tempfile, zipimport
sys.path.insert(0, {str(PYSPARK_ZIP)!r})
from federator_spark import worker_daemon
how = sys.argv[1]
if how == "source-runner":
    worker_daemon.zip_rereads_spared_at_first_use()
import pyspark.sql.worker.create_data_source  # from the archive, as a planner's or the runner's imports
assert ".zip" in pyspark.__file__
if how == "daemon":
    worker_daemon.without_zip_rereads()  # the daemons' preload ends with it

reads = []
read = zipimport._read_directory
zipimport._read_directory = lambda archive: reads.append(archive) or read(archive)
from pyspark.worker_util import setup_spark_files
setup_spark_files(tempfile.mkdtemp(), [])
import pyspark.sql.worker.plan_data_source_read  # an import from the archive still works after
print(len(reads))
"""

THREADS_ALLOCATING = """
import ctypes, os, sys, tempfile, threading
from federator_spark import worker_daemon

libc = ctypes.CDLL(None)
libc.fdopen.restype, libc.fdopen.argtypes = ctypes.c_void_p, [ctypes.c_int, ctypes.c_char_p]
libc.malloc_info.argtypes, libc.fclose.argtypes = [ctypes.c_int, ctypes.c_void_p], [ctypes.c_void_p]
if sys.argv[1] == "capped":
    worker_daemon.fewer_malloc_arenas()
if os.fork() == 0:  # a worker: eight threads allocating at once
    together = threading.Barrier(8)
    def allocate():
        kept = [ctypes.create_string_buffer(200_000) for _ in range(5)]
        together.wait()
    threads = [threading.Thread(target=allocate) for _ in range(8)]
    [thread.start() for thread in threads]
    [thread.join() for thread in threads]
    with tempfile.TemporaryFile() as out:
        stream = libc.fdopen(os.dup(out.fileno()), b"w")
        libc.malloc_info(0, stream)
        libc.fclose(stream)
        out.seek(0)
        print(out.read().count(b"<heap nr="), flush=True)
    os._exit(0)
os.wait()
"""


def run(script: str, how: str) -> int:
    done = subprocess.run([sys.executable, "-c", script, how], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return int(done.stdout.split()[-1])


def test_a_fresh_worker_of_a_daemon_re_reads_no_zip_archive_at_its_first_use() -> None:
    assert PYSPARK_ZIP.is_file()
    assert run(FIRST_USE, "as-pyspark-leaves-it") > 5  # each importer of the archive's packages: 0.2-1.6 s
    assert run(FIRST_USE, "daemon") == 0


def test_a_query_s_source_runner_re_reads_no_zip_archive_at_its_start() -> None:
    assert run(FIRST_USE, "source-runner") == 0


def test_the_tasks_workers_hold_at_most_two_malloc_arenas_whatever_their_threads() -> None:
    assert run(THREADS_ALLOCATING, "glibc-default") > 2  # one per thread, up to eight per core
    assert run(THREADS_ALLOCATING, "capped") <= TASK_MALLOC_ARENAS
