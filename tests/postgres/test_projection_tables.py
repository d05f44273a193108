"""The target table: created with its schema when missing, checked when it exists, and writable by a
role that may only insert into it."""

from __future__ import annotations

import secrets

import psycopg
import pytest
from projection_helpers import URI_ENV, event, publish, rows, target, with_credentials

from federator_spark.sinks.postgres import PostgresPublisher, PostgresTargetError


def test_a_schema_qualified_table_is_created_with_its_schema(uri):
    publish(target("telemetry.readings_history", "history"), [event(0, key="dev-1")])
    publish(target("telemetry.readings_latest", "compacted"), [event(0, key="dev-1")])

    tables = rows(
        uri,
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'telemetry' ORDER BY 1",
    )
    assert [t["table_name"] for t in tables] == ["readings_history", "readings_latest"]
    assert rows(uri, "SELECT partition_key FROM telemetry.readings_latest") == [{"partition_key": "dev-1"}]


def test_primary_keys_follow_the_mode(uri):
    publish(target("h", "history"), [event(0)])
    publish(target("c", "compacted"), [event(0)])

    keys = rows(
        uri,
        "SELECT c.relname AS t, array_agg(a.attname ORDER BY a.attname) AS k FROM pg_index i"
        " JOIN pg_class c ON c.oid = i.indrelid"
        " JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)"
        " WHERE i.indisprimary AND c.relname IN ('h', 'c') GROUP BY c.relname ORDER BY 1",
    )
    assert keys == [{"t": "c", "k": ["key"]}, {"t": "h", "k": ["partition", "sequence_number", "source"]}]


def test_a_table_of_the_other_mode_is_refused_with_a_clear_error(uri):
    publish(target("readings", "history"), [event(0)])

    with pytest.raises(PostgresTargetError, match=r"table readings exists but is not a compacted projection"):
        PostgresPublisher(target("readings", "compacted"))


def test_an_unrelated_existing_table_is_refused(uri):
    with psycopg.connect(uri) as connection:
        connection.execute("CREATE TABLE readings (id int PRIMARY KEY, payload text)")

    with pytest.raises(PostgresTargetError, match=r"missing columns: partition_key, source, .*instead of"):
        PostgresPublisher(target("readings", "history"))


@pytest.mark.parametrize(
    ("mode", "privileges"), [("history", "SELECT, INSERT"), ("compacted", "SELECT, INSERT, UPDATE")]
)
def test_a_role_that_may_only_write_the_existing_table_can_project(uri, monkeypatch, mode, privileges):
    publish(target("app.readings", mode), [event(0, key="dev-1")])
    role, password = f"writer_{secrets.token_hex(4)}", secrets.token_hex(8)
    with psycopg.connect(uri, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")
        admin.execute(f"GRANT USAGE ON SCHEMA app TO {role}")
        admin.execute(f"GRANT {privileges} ON app.readings TO {role}")
    monkeypatch.setenv(URI_ENV, with_credentials(uri, password, user=role))
    try:
        publish(target("app.readings", mode), [event(0, key="dev-1"), event(1, key="dev-1")])
    finally:
        with psycopg.connect(uri, autocommit=True) as admin:
            admin.execute(f"DROP OWNED BY {role}; DROP ROLE {role}")

    expected = [0, 1] if mode == "history" else [1]
    found = rows(uri, "SELECT sequence_number FROM app.readings ORDER BY 1")
    assert [r["sequence_number"] for r in found] == expected
