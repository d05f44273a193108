"""The editors: each keeps, changes, drops or rejects an event before routing (see
:mod:`federator_spark.editors.base` for the contract), one module per kind. The driver builds a task's chain
(``editors.building``); a worker imports only the kinds its plan holds."""
