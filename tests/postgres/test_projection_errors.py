"""Connection problems: transient ones are retried on a new connection, the rest fail with a message
that names the target and where its URI comes from, but never the URI or its password."""

from __future__ import annotations

import logging

import psycopg
import pytest
from projection_helpers import URI_ENV, event, rows, target, with_credentials

from federator_spark.sinks.postgres import PostgresPublisher, PostgresTargetError, redact


@pytest.mark.slow  # the failure is retried with backoff (about 8 s) before it is reported
def test_a_wrong_password_fails_clearly_without_revealing_it(uri, monkeypatch, caplog):
    monkeypatch.setenv(URI_ENV, with_credentials(uri, "not-the-Secret-pw"))

    with pytest.raises(PostgresTargetError) as raised:
        PostgresPublisher(target("readings", "history"))

    message = str(raised.value)
    assert "password authentication failed" in message
    assert f"PostgreSQL target 'history' (table readings, URI from {URI_ENV})" in message
    assert "not-the-Secret-pw" not in message
    assert raised.value.__cause__ is None and raised.value.__suppress_context__
    assert "not-the-Secret-pw" not in caplog.text


def test_a_malformed_uri_fails_at_once_without_revealing_the_password(uri, monkeypatch):
    monkeypatch.setenv(URI_ENV, with_credentials(uri, "s3cret-pw") + "?bogus=1")

    with pytest.raises(PostgresTargetError, match=r'invalid URI query parameter: "bogus"') as raised:
        PostgresPublisher(target("readings", "history"))

    assert "s3cret-pw" not in str(raised.value)


def test_a_missing_environment_variable_is_named(monkeypatch):
    monkeypatch.delenv(URI_ENV, raising=False)

    with pytest.raises(RuntimeError, match=f"environment variable {URI_ENV} is not set"):
        PostgresPublisher(target("readings", "history"))


def test_a_connection_lost_before_the_flush_is_retried_on_a_new_connection(uri, caplog):
    publisher = PostgresPublisher(target("readings", "history"), task="t")
    try:
        for sequence in range(3):
            publisher.add(event(sequence), {})
        with psycopg.connect(uri, autocommit=True) as admin:
            terminated = admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE application_name = 'federator' AND datname = current_database()"
            ).fetchall()
        assert terminated == [(True,)]

        with caplog.at_level(logging.WARNING, logger="federator_spark.retry"):
            publisher.flush()
    finally:
        publisher.close()

    assert rows(uri, "SELECT count(*) AS n FROM readings") == [{"n": 3}]
    assert "attempt 1/5, retrying" in caplog.text


@pytest.mark.parametrize(
    ("message", "uri", "expected"),
    [
        ("x postgresql://u:p%40ss@h/db y", "postgresql://u:p%40ss@h/db", "x *** y"),
        ('near "p@ss"', "postgresql://u:p%40ss@h/db", 'near "***"'),
        ("bad password=hunter2 host=h", "host=h password=hunter2", "bad password=*** host=h"),
        ("no secret here", "postgresql://u@h/db", "no secret here"),
    ],
)
def test_redaction_removes_the_uri_and_its_password(message, uri, expected):
    assert redact(message, uri) == expected
