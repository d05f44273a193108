"""Connection problems: transient ones are retried on a new connection, refused credentials stop with a
specific reason, and every message names the target and where its URI comes from, but never the URI or
its password."""

from __future__ import annotations

import logging

import psycopg
import pytest
from projection_helpers import URI_ENV, event, rows, target, with_credentials

from federator_spark.outages import EndpointRefusedError
from federator_spark.sinks.postgres import PostgresPublisher, PostgresTargetError, redact


def test_a_wrong_password_stops_at_once_with_its_reason_without_revealing_it(uri, monkeypatch, caplog):
    monkeypatch.setenv(URI_ENV, with_credentials(uri, "not-the-Secret-pw"))

    with pytest.raises(EndpointRefusedError) as raised:
        PostgresPublisher(target("readings", "history"))

    assert raised.value.reason == "TargetAuthRefused"
    message = str(raised.value)
    assert "password authentication failed" in message
    assert f"PostgreSQL target 'history' (table readings, URI from {URI_ENV})" in message
    assert "not-the-Secret-pw" not in message
    cause = raised.value.__cause__  # the refusal in the publisher's words: psycopg's error is not kept
    assert cause is not None and cause.__cause__ is None and cause.__suppress_context__
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

        with caplog.at_level(logging.WARNING, logger="federator_spark.outages"):
            publisher.flush()
    finally:
        publisher.close()

    assert rows(uri, "SELECT count(*) AS n FROM readings") == [{"n": 3}]
    assert "history unavailable" in caplog.text and "attempt 1, next in" in caplog.text


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
