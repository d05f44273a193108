"""The Service Bus SQL filter and rule action language.

Used by the emulator (subscription rules), ``federator validate`` (routing conditions and filter
editors of ReplicationTask manifests) and the Spark replication app (routing per event, in the
:attr:`Dialect.FEDERATOR` dialect that can also read the JSON body). See ``docs/sql.md``.
"""

from federator.sql.actions import Action, parse_action
from federator.sql.correlation import CorrelationFilter
from federator.sql.errors import SqlSyntaxError
from federator.sql.filters import Filter, parse_filter
from federator.sql.model import Dialect, SqlMessage
from federator.sql.system_properties import SYSTEM_PROPERTIES, SystemProperty, format_timespan, parse_timespan

__all__ = [
    "SYSTEM_PROPERTIES",
    "Action",
    "CorrelationFilter",
    "Dialect",
    "Filter",
    "SqlMessage",
    "SqlSyntaxError",
    "SystemProperty",
    "format_timespan",
    "parse_action",
    "parse_filter",
    "parse_timespan",
]
