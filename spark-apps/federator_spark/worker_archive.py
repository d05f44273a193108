"""PySpark's archive for the Python processes Spark starts, with the modules' bytecode in it.

Spark puts ``$SPARK_HOME/python/lib/pyspark.zip`` first on the path of every Python process it starts
(the worker daemons, the data source planners, the streaming source's process), and Python caches no
bytecode for modules it imports from an archive: each of those processes compiled every PySpark module
it imports, about 1 s of CPU each (1.44 s against 0.39 s for the same imports from the installed
package), several at start-up and one more each time a query starts. This adds the compiled modules to
the archive beside their sources, as hash-checked ``.pyc`` entries: ``zipimport`` loads one when the
hash of its source in the archive matches and compiles the source as before when it does not.

    python -m federator_spark.worker_archive [ARCHIVE]    (default: the archive of this pyspark)

``./dev setup`` runs it for ``.venv``, the Spark image's build for its venv: with the Python the workers
run, whose bytecode it writes.
"""

from __future__ import annotations

import importlib.util
import marshal
import os
import re
import sys
import tempfile
import warnings
import zipfile
from pathlib import Path

from federator_spark.spark_settings import spark_home

# Entries left as sources: PySpark's own test suites, which no process of the app imports.
_NOT_COMPILED = ("/tests/", "/testing/")
# A .pyc's flags (PEP 552): based on its source's hash, and that hash checked at import.
_CHECKED_HASH = (0b11).to_bytes(4, "little")


def default_archive() -> Path:
    """The archive Spark puts on its Python processes' path."""
    return spark_home() / "python" / "lib" / "pyspark.zip"


def compiled(archive: Path) -> bool:
    """Whether ``archive`` holds bytecode of this interpreter's version for its package's top module."""
    with zipfile.ZipFile(archive) as zipped:
        names = set(zipped.namelist())
        tops = [name[:-3] + ".pyc" for name in names if re.fullmatch(r"[^/]+/__init__\.py", name)]
        return bool(tops) and all(
            top in names and zipped.read(top)[:4] == importlib.util.MAGIC_NUMBER for top in tops
        )


def compile_archive(archive: Path) -> int:
    """Rewrite ``archive`` with a ``.pyc`` beside each module's source (replacing any of another Python
    version); the file is replaced in one rename. Returns how many modules were compiled."""
    count = 0
    fd, temporary = tempfile.mkstemp(prefix=".pyspark-", suffix=".zip", dir=archive.parent)
    os.close(fd)
    try:
        with zipfile.ZipFile(archive) as source, zipfile.ZipFile(temporary, "w") as target:
            for entry in source.infolist():
                if entry.filename.endswith(".pyc"):
                    continue  # written again below, for this interpreter
                data = source.read(entry)
                target.writestr(entry, data)
                bytecode = _bytecode(archive, entry.filename, data)
                if bytecode is not None:
                    pyc = zipfile.ZipInfo(entry.filename[:-3] + ".pyc", entry.date_time)
                    target.writestr(pyc, bytecode, compress_type=zipfile.ZIP_DEFLATED)
                    count += 1
        os.chmod(temporary, archive.stat().st_mode & 0o777)
        os.replace(temporary, archive)
    except BaseException:
        os.unlink(temporary)
        raise
    return count


def _bytecode(archive: Path, name: str, source: bytes) -> bytes | None:
    """A hash-checked .pyc of the module ``name`` in ``archive``, named in tracebacks as zipimport names
    its source; None for what is not a module to compile."""
    if not name.endswith(".py") or any(part in f"/{name}" for part in _NOT_COMPILED):
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. SyntaxWarning: the same the source would print at import
        try:
            code = compile(source, os.path.join(archive, name), "exec", dont_inherit=True)
        except SyntaxError:
            return None  # left for zipimport, which raises it if the module is ever imported
    header = importlib.util.MAGIC_NUMBER + _CHECKED_HASH + importlib.util.source_hash(source)
    return header + marshal.dumps(code)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    archive = Path(args[0]) if args else default_archive()
    if not archive.is_file():
        print(f"worker_archive: no archive at {archive}", file=sys.stderr)
        return 1
    if compiled(archive):
        return 0
    count = compile_archive(archive)
    print(f"worker_archive: {count} modules compiled into {archive}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
