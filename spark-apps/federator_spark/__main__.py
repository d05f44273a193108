"""`python -m federator_spark --task-config ...`: the replication app, from an installed package."""

import sys

from federator_spark.app import main

sys.exit(main())
