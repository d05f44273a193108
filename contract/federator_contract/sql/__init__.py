"""The Service Bus SQL filter and rule action language.

Used by the emulator (subscription rules), ``federator validate`` (routing conditions and filter
editors of ReplicationTask manifests) and the Spark replication app (routing per event, in the
:attr:`Dialect.FEDERATOR` dialect that can also read the JSON body). See ``docs/sql.md``.
"""

from federator_contract.sql.actions import Action, parse_action
from federator_contract.sql.correlation import CorrelationFilter
from federator_contract.sql.errors import SqlSyntaxError
from federator_contract.sql.filters import Filter, parse_filter
from federator_contract.sql.model import Dialect, SqlMessage
from federator_contract.sql.system_properties import (
    SYSTEM_PROPERTIES,
    SystemProperty,
    format_timespan,
    parse_timespan,
)

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
