"""What importing the data source module costs a Python process: Spark's ``create_data_source`` planner
imports it to make a data source and ask its schema, and keeps that worker for reuse. The readers, the
writers and the SDKs they use are imported where they are made (docs/replication.md, "Memory of one
application")."""

from __future__ import annotations

import json
import subprocess
import sys

IMPORT = """
import json, sys
import federator_spark.datasources
loaded = [name for name in sys.modules if name.startswith(("azure", "federator_spark.sources."))]
print(json.dumps(sorted(loaded)))
"""


def test_importing_the_data_sources_loads_no_azure_sdk_and_no_reader() -> None:
    run = subprocess.run([sys.executable, "-c", IMPORT], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]

    assert json.loads(run.stdout) == [
        "federator_spark.sources.eventhubs_settings",
        "federator_spark.sources.servicebus_settings",
        "federator_spark.sources.trigger_phase",  # a type the settings hold: a dataclass, nothing more
    ]
