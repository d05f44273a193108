"""Log projection: events become rows of a PostgreSQL table, idempotently under batch replay.

``history`` keeps one row per event, keyed by its source identity (source, partition, sequence
number): a replayed batch inserts nothing twice. ``compacted`` keeps one row per partition key (keyless
events: one per source partition, key ``<source>/<partition>``) and replaces it only with a newer
event — from the same source partition a higher sequence number, otherwise a later enqueue time — so
a replay never moves a row backwards.

Each flush is one transaction: the buffered rows are COPYed into a session-local staging table and
merged with one INSERT … ON CONFLICT. Transient errors (connection lost, server restarting, deadlock)
retry the whole flush on a new connection. The connection URI comes from an environment variable and
never appears in logs or errors.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal, TypeVar
from urllib.parse import unquote, urlsplit

import psycopg
from psycopg import sql

from federator_spark.events import Event
from federator_spark.outages import Endpoint, RefusalError, TransientError, retrying
from federator_spark.plan import TargetPlan
from federator_spark.property_types import PropertyValue, as_text

logger = logging.getLogger(__name__)
T = TypeVar("T")

_FLUSH_ROWS = 5000  # per transaction; bounds memory and lock time
_CONNECT_TIMEOUT_SECONDS = 10
_STAGING = "federator_staging"

# Columns shared by both modes, in COPY order (the staging table has exactly these).
_EVENT_COLUMNS = (
    ("key", "text NOT NULL"),
    ("partition_key", "text"),
    ("source", "text NOT NULL"),
    ("partition", "text NOT NULL"),
    ("sequence_number", "bigint NOT NULL"),
    ("source_offset", "text NOT NULL"),
    ("enqueued_time", "timestamptz NOT NULL"),
    ("body", "bytea NOT NULL"),
    ("body_json", "jsonb"),
    ("properties", "jsonb NOT NULL"),
    ("system_properties", "jsonb NOT NULL"),
)
_WRITER_COLUMNS = (("task", "text"), ("replicated_at", "timestamptz NOT NULL DEFAULT now()"))
_PRIMARY_KEYS = {"history": ("source", "partition", "sequence_number"), "compacted": ("key",)}


class PostgresTargetError(RuntimeError):
    """A PostgreSQL target cannot be written; the message never contains the connection URI."""


class _TransientError(PostgresTargetError, TransientError):
    """Worth another attempt on a new connection."""


# Configuration errors (retrying cannot help): refused credentials or a missing database, by SQLSTATE, or
# by libpq's words when the connection fails before the server could send one.
_REFUSED: dict[str, Literal["auth", "notFound"]] = {"28000": "auth", "28P01": "auth", "3D000": "notFound"}
_REFUSED_WORDS: dict[str, Literal["auth", "notFound"]] = {
    "password authentication failed": "auth",
    "no pg_hba.conf entry": "auth",
    "does not exist": "notFound",
}


def _refusal(error: psycopg.OperationalError) -> Literal["auth", "notFound"] | None:
    text = str(error)
    by_words = (kind for words, kind in _REFUSED_WORDS.items() if words in text)
    return _REFUSED.get(error.sqlstate or "") or next(by_words, None)


def _definitions(columns: Iterable[tuple[str, str]]) -> sql.Composed:
    return sql.SQL(", ").join(
        sql.SQL("{} {}").format(sql.Identifier(n), sql.SQL(kind)) for n, kind in columns
    )


def table_columns(mode: Literal["history", "compacted"]) -> list[tuple[str, str]]:
    """The table layout of a mode: history has no ``key`` (the source identity is the key)."""
    columns = [*_EVENT_COLUMNS, *_WRITER_COLUMNS]
    return [c for c in columns if c[0] != "key"] if mode == "history" else columns


class PostgresPublisher:
    def __init__(self, target: TargetPlan, task: str | None = None, status_file: str | None = None) -> None:
        self.target = target
        self.task = task
        self._endpoint = Endpoint("target", target.name, status_file)
        self._table = sql.Identifier(*target.entity.split("."))
        self._uri = target.connection.resolved_connection_string() or ""
        self._connection: psycopg.Connection[Any] | None = None
        self._pending: list[tuple[Any, ...]] = []
        try:
            self._run(self._ensure_table, "prepare the table")
        except BaseException:
            self.close()  # nobody else can: the caller never gets this publisher
            raise

    # ------------------------------------------------------------------------------------ publishing

    def add(self, event: Event, properties: Mapping[str, PropertyValue]) -> None:
        key = event.partition_key if event.partition_key is not None else f"{event.source}/{event.partition}"
        self._pending.append(
            (
                _text(key),
                _text(event.partition_key),
                event.source,
                event.partition,
                event.sequence_number,
                event.offset,
                event.enqueued_time,
                event.body,
                body_json(event.body),
                _json_text(properties),
                _json_text(event.system_properties),
            )
        )
        if len(self._pending) >= _FLUSH_ROWS:
            self.flush()

    def flush(self) -> None:
        if not self._pending:
            return
        written = self._run(self._write, f"write {len(self._pending)} rows")
        logger.debug(
            "target %s: %d of %d events changed %s",
            self.target.name,
            written,
            len(self._pending),
            self.target.entity,
        )
        self._pending = []

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    # ------------------------------------------------------------------------------------ SQL

    def _write(self, connection: psycopg.Connection[Any]) -> int:
        names = sql.SQL(", ").join(sql.Identifier(name) for name, _ in _EVENT_COLUMNS)
        with connection.transaction(), connection.cursor() as cursor:
            with cursor.copy(
                sql.SQL("COPY {} ({}) FROM STDIN").format(sql.Identifier(_STAGING), names)
            ) as copy:
                for row in self._pending:
                    copy.write_row(row)
            cursor.execute(self._merge_statement(), {"task": self.task})
            return cursor.rowcount

    def _merge_statement(self) -> sql.Composed:
        columns = [
            name for name, _ in table_columns(self.target.mode) if name not in ("task", "replicated_at")
        ]
        names = sql.SQL(", ").join(sql.Identifier(name) for name in columns)
        into = sql.SQL("INSERT INTO {table} AS t ({names}, task, replicated_at) ").format(
            table=self._table, names=names
        )
        if self.target.mode == "history":
            # DO NOTHING also skips a duplicate inside the same batch.
            return into + sql.SQL(
                "SELECT {names}, %(task)s, now() FROM {staging} "
                "ON CONFLICT (source, partition, sequence_number) DO NOTHING"
            ).format(names=names, staging=sql.Identifier(_STAGING))
        updates = sql.SQL(", ").join(
            sql.SQL("{0} = excluded.{0}").format(sql.Identifier(name))
            for name in [*columns, "task", "replicated_at"]
            if name != "key"
        )
        # Newest per key inside the batch first (one row may be upserted once per statement): the
        # highest sequence number per source partition, then the latest enqueue time across them.
        # ORDER BY key also takes row locks in one order, so concurrent writers cannot deadlock.
        return into + sql.SQL(
            "SELECT {names}, %(task)s, now() FROM ("
            " SELECT DISTINCT ON (key) * FROM ("
            "  SELECT DISTINCT ON (key, source, partition) * FROM {staging}"
            "  ORDER BY key, source, partition, sequence_number DESC) AS per_partition"
            " ORDER BY key, enqueued_time DESC, sequence_number DESC) AS newest "
            "ORDER BY key "
            "ON CONFLICT (key) DO UPDATE SET {updates} "
            "WHERE CASE WHEN t.source = excluded.source AND t.partition = excluded.partition"
            " THEN excluded.sequence_number > t.sequence_number"
            " ELSE excluded.enqueued_time > t.enqueued_time END"
        ).format(names=names, staging=sql.Identifier(_STAGING), updates=updates)

    def _ensure_table(self, connection: psycopg.Connection[Any]) -> None:
        """Create the table (and its schema) if missing, under an advisory lock because concurrent
        CREATE … IF NOT EXISTS can collide; check an existing table fits the mode."""
        entity, mode = self.target.entity, self.target.mode
        with connection.transaction():
            connection.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [f"federator:{entity}"])
            # Privileges: a writer that may only insert into an existing table never runs CREATE.
            oid = self._relation(connection)
            if oid is None:
                if "." in entity:
                    connection.execute(
                        sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(entity.split(".")[0]))
                    )
                definition = _definitions(table_columns(mode))
                primary = sql.SQL(", ").join(sql.Identifier(name) for name in _PRIMARY_KEYS[mode])
                connection.execute(
                    sql.SQL("CREATE TABLE {} ({}, PRIMARY KEY ({}))").format(self._table, definition, primary)
                )
                connection.execute(
                    sql.SQL("CREATE INDEX ON {} (partition_key, enqueued_time)").format(self._table)
                )
                logger.info("target %s: created %s table %s", self.target.name, mode, entity)
            else:
                self._check_layout(connection, oid)

    def _relation(self, connection: psycopg.Connection[Any]) -> int | None:
        name = self._table.as_string(connection)
        row = connection.execute("SELECT to_regclass(%s)::oid", [name]).fetchone()
        return None if row is None else row[0]

    def _check_layout(self, connection: psycopg.Connection[Any], oid: int) -> None:
        present = {
            row[0]
            for row in connection.execute(
                "SELECT attname FROM pg_attribute WHERE attrelid = %s AND attnum > 0 AND NOT attisdropped",
                [oid],
            )
        }
        primary = {
            row[0]
            for row in connection.execute(
                "SELECT a.attname FROM pg_index i JOIN pg_attribute a"
                " ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)"
                " WHERE i.indrelid = %s AND i.indisprimary",
                [oid],
            )
        }
        mode = self.target.mode
        missing = [name for name, _ in table_columns(mode) if name not in present]
        if missing or primary != set(_PRIMARY_KEYS[mode]):
            raise PostgresTargetError(
                f"PostgreSQL target {self.target.name!r}: table {self.target.entity} exists but is not a "
                f"{mode} projection (missing columns: {', '.join(missing) or 'none'}; primary key "
                f"({', '.join(sorted(primary)) or 'none'}) instead of ({', '.join(_PRIMARY_KEYS[mode])})); "
                "use another table or drop it"
            )

    # ------------------------------------------------------------------------------------ connection

    def _run(self, action: Callable[[psycopg.Connection[Any]], T], what: str) -> T:
        """``action(connection)`` with retries on transient errors, each attempt on a live connection."""

        def attempt() -> T:
            try:
                return action(self._connected())
            except psycopg.OperationalError as error:
                self.close()  # the connection may be broken; the next attempt opens a new one
                refused = _refusal(error)
                if refused is not None:
                    raise RefusalError(refused, self._describe(error)) from None
                raise _TransientError(self._describe(error)) from None
            except psycopg.Error as error:
                self.close()
                raise PostgresTargetError(self._describe(error)) from None

        return retrying(attempt, self._endpoint, f"{what} in {self.target.entity}")

    def _connected(self) -> psycopg.Connection[Any]:
        if self._connection is None:
            self._connection = psycopg.connect(
                self._uri, connect_timeout=_CONNECT_TIMEOUT_SECONDS, application_name="federator"
            )
            # Session-local (no name clash between writers), emptied by every commit.
            self._connection.execute(
                sql.SQL("CREATE TEMP TABLE {} ({}) ON COMMIT DELETE ROWS").format(
                    sql.Identifier(_STAGING), _definitions(_EVENT_COLUMNS)
                )
            )
            self._connection.commit()
        return self._connection

    def _describe(self, error: psycopg.Error) -> str:
        env = self.target.connection.connection_string_env or "the task config"
        return (
            f"PostgreSQL target {self.target.name!r} (table {self.target.entity}, URI from {env}): "
            f"{redact(str(error).strip(), self._uri)}"
        )


# ------------------------------------------------------------------------------------ values


def body_json(body: bytes) -> str | None:
    """The body as JSON text for a jsonb column, or None when it is not JSON that jsonb accepts
    (jsonb has no NaN/Infinity and no NUL characters)."""

    def reject(constant: str) -> Any:
        raise ValueError(constant)

    try:
        value = json.loads(body.decode("utf-8"), parse_constant=reject)
        text = json.dumps(value, ensure_ascii=False)
        text.encode("utf-8")  # lone surrogates from \ud800-style escapes
    except ValueError:  # includes UnicodeError and JSONDecodeError
        return None
    return None if _has_nul(value) else text


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_nul(v) for v in value)
    return False


def _text(value: str | None) -> str | None:
    """PostgreSQL text cannot hold NUL: it becomes U+FFFD (the body bytes stay exact)."""
    return None if value is None else value.replace("\x00", "\ufffd")


def _json_text(mapping: Mapping[str, PropertyValue]) -> str:
    """Numbers and booleans as JSON's own (a projection can be queried by value); the rest as text."""
    return json.dumps({_text(k): _json_value(v) for k, v in mapping.items()}, ensure_ascii=False)


def _json_value(value: PropertyValue) -> str | int | float | bool | None:
    if isinstance(value, bool | int) or (isinstance(value, float) and math.isfinite(value)):
        return value
    return _text(as_text(value))


_KEYWORD_PASSWORD = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)


def redact(message: str, uri: str) -> str:
    """``message`` without the URI or its password (libpq may echo parts of a malformed URI)."""
    secrets: list[str] = [uri] if uri else []
    try:
        password = urlsplit(uri).password
    except ValueError:
        password = None
    if password:
        secrets += [password, unquote(password)]
    for secret in sorted(secrets, key=len, reverse=True):
        message = message.replace(secret, "***")
    return _KEYWORD_PASSWORD.sub(r"\1***", message)
