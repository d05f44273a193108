"""The app's local file system (spark-apps/jvm, turned on by federator_spark.spark_settings): Hadoop's
checksummed ``file://`` file system that sets permission bits through Java instead of a ``chmod``
process per file, and leaves every file as Hadoop's own would."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import pytest
from spark_helpers import eh_endpoint, read_all, run_task, send, task_config

from federator_contract.sparkconf import APP_SPARK_CONF
from federator_spark import spark_settings
from federator_spark.spark_settings import FILE_SYSTEM_JAR, FILE_SYSTEM_SETTING, LOCAL_FILE_SYSTEM


def file_system(spark):
    """The session's ``file://`` file system."""
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    return spark._jvm.org.apache.hadoop.fs.FileSystem.get(spark._jvm.java.net.URI("file:///"), conf)


def hadoops_file_system(spark):
    """A fresh instance of Hadoop's own local file system, as Spark would have without the app's."""
    fs = spark._jvm.org.apache.hadoop.fs.LocalFileSystem()
    fs.initialize(spark._jvm.java.net.URI("file:///"), spark.sparkContext._jsc.hadoopConfiguration())
    return fs


def create(spark, fs, path: Path) -> None:
    fs.create(spark._jvm.org.apache.hadoop.fs.Path(f"file://{path}"), True).close()


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_session_reads_and_writes_local_files_through_the_apps_file_system(spark):
    fs = file_system(spark)
    assert fs.getClass().getName() == LOCAL_FILE_SYSTEM
    assert fs.getRaw().getClass().getName() == f"{LOCAL_FILE_SYSTEM}$Raw"


def test_a_new_file_and_its_checksum_get_the_modes_hadoops_own_file_system_gives_them(spark, tmp_path):
    ours, hadoops = tmp_path / "ours", tmp_path / "hadoops"
    ours.mkdir()
    hadoops.mkdir()
    create(spark, file_system(spark), ours / "entry")
    create(spark, hadoops_file_system(spark), hadoops / "entry")

    assert sorted(os.listdir(ours)) == sorted(os.listdir(hadoops)) == [".entry.crc", "entry"]
    for name in (".entry.crc", "entry"):
        assert mode(ours / name) == mode(hadoops / name) == 0o644  # 0666 less Hadoop's umask, 022


@pytest.mark.parametrize("octal", ["600", "640", "755", "444", "1777"])
def test_set_permission_sets_exactly_the_mode_asked_for(spark, tmp_path, octal):
    """Sticky (1777) is beyond what Java sets: Hadoop's own chmod still does it."""
    fs = file_system(spark)
    path = spark._jvm.org.apache.hadoop.fs.Path(f"file://{tmp_path / 'f'}")
    fs.create(path, True).close()

    fs.setPermission(path, spark._jvm.org.apache.hadoop.fs.permission.FsPermission(octal))

    assert mode(tmp_path / "f") == int(octal, 8)


def test_a_task_keeps_its_checkpoint_logs_with_their_checksums(spark, emulator_factory, tmp_path):
    hubs = [{"name": name, "partitionCount": 1} for name in ("a", "b")]
    emulator = emulator_factory({"namespaces": [{"name": "ns1", "eventHubs": hubs}]})
    cs = emulator.connection_string("ns1")
    send(cs, "a", [{"body": f"e{i}", "partition": "0"} for i in range(3)])
    spec = {"source": eh_endpoint("ns1", "a"), "targets": [{"name": "b", **eh_endpoint("ns1", "b")}]}

    run_task(spark, task_config(tmp_path, emulator, spec))

    assert sum(len(events) for events in read_all(cs, "b").values()) == 3
    checkpoint = tmp_path / "checkpoint-task"
    for log in ("offsets", "commits"):
        assert sorted(os.listdir(checkpoint / log)) == [".0.crc", "0"]
        assert mode(checkpoint / log / "0") == 0o644


def test_the_settings_turn_the_apps_file_system_on_only_where_spark_finds_it(monkeypatch, tmp_path, caplog):
    monkeypatch.setenv("SPARK_HOME", str(tmp_path))
    (tmp_path / "jars").mkdir()
    with caplog.at_level(logging.WARNING, logger=spark_settings.__name__):
        assert spark_settings.settings() == {
            **APP_SPARK_CONF,
            **spark_settings.python_sockets(),
            **spark_settings.python_workers_path(),
        }
    assert f"{FILE_SYSTEM_JAR} is missing" in caplog.text

    (tmp_path / "jars" / FILE_SYSTEM_JAR).write_bytes(b"")
    assert spark_settings.settings()[FILE_SYSTEM_SETTING] == LOCAL_FILE_SYSTEM
