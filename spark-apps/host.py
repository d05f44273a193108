"""The file spark-submit runs for a ReplicationApplication (`local:///opt/federator/host.py` in the
image): the shared driver of the installed `federator_spark` package, one streaming query per member task.

spark-submit host.py --task-configmaps federator.io/application=NAME --metrics-port 9464
"""

import sys

from federator_spark.host import main

if __name__ == "__main__":
    sys.exit(main())
