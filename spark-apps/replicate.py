"""The file spark-submit runs (`local:///opt/federator/replicate.py` in the image): the replication app
of the installed `federator_spark` package.

spark-submit replicate.py --task-config /etc/federator/task/task.json
"""

import sys

from federator_spark.app import main

if __name__ == "__main__":
    sys.exit(main())
