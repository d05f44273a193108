"""How one application's driver decides which queries to run (``federator_spark.fleet``): the configs it
is given are the desired state, its queries the actual one; each pass turns the difference into starts,
stops and reports, one task at a time. No JVM here: the decision is a pure function, the reader a few
``stat`` calls."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from federator_contract.taskconfig import TaskConfig
from federator_spark import host
from federator_spark.fleet import (
    ConfigReader,
    Found,
    Member,
    Report,
    Start,
    Stop,
    backoff,
    config_files,
    decide,
)


def task(name: str, hub: str = "orders", *, trigger: int = 3) -> TaskConfig:
    endpoint = {"connection": {"emulator": {"namespace": "a"}}}
    return TaskConfig.from_raw(
        {
            "metadata": {"name": name, "namespace": "shop"},
            "spec": {
                "source": {"eventHub": {**endpoint, "eventHubName": hub}},
                "targets": [{"name": "copy", "eventHub": {**endpoint, "eventHubName": f"{hub}-copy"}}],
                "runtime": {"triggerIntervalSeconds": trigger},
            },
            "checkpointLocation": f"file:///checkpoints/{name}",
        }
    )


def found(*configs: TaskConfig) -> list[Found]:
    return [Found(f"/tasks/{config.name}.json", config) for config in configs]


def test_a_new_config_starts_its_task_and_leaves_the_running_ones_alone() -> None:
    running = {"shop/a": Member(task("a"))}

    assert decide(found(task("a"), task("b")), running, now=0.0) == [Start("shop/b", task("b"))]


def test_a_changed_config_restarts_only_its_task() -> None:
    running = {"shop/a": Member(task("a")), "shop/b": Member(task("b"))}
    edited = task("b", trigger=10)

    assert decide(found(task("a"), edited), running, now=0.0) == [
        Stop("shop/b", "its config changed"),
        Start("shop/b", edited),
    ]


def test_a_config_read_again_unchanged_changes_nothing() -> None:
    running = {"shop/a": Member(task("a"))}

    assert decide(found(task("a")), running, now=0.0) == []


def test_a_removed_config_stops_only_its_task() -> None:
    running = {"shop/a": Member(task("a")), "shop/b": Member(task("b"))}

    assert decide(found(task("a")), running, now=0.0) == [Stop("shop/b", "its config is gone")]


def test_a_failed_query_starts_again_only_once_its_backoff_is_over() -> None:
    failed = {"shop/a": Member(task("a"), running=False, retry_at=10.0)}

    assert decide(found(task("a")), failed, now=9.0) == []
    assert decide(found(task("a")), failed, now=10.0) == [Start("shop/a", task("a"))]


def test_a_failed_task_whose_config_is_removed_is_not_started_again() -> None:
    failed = {"shop/a": Member(task("a"), running=False, retry_at=10.0)}

    assert decide([], failed, now=20.0) == [Stop("shop/a", "its config is gone")]


def test_a_broken_file_is_reported_and_the_others_start() -> None:
    broken = Found("/tasks/x.json", error="the task config is not JSON: Expecting value")

    assert decide([broken, *found(task("a"))], {}, now=0.0) == [
        Report("/tasks/x.json", "the task config is not JSON: Expecting value"),
        Start("shop/a", task("a")),
    ]


def test_a_broken_edit_is_reported_against_its_task_which_keeps_running_as_it_was() -> None:
    running = {"shop/a": Member(task("a"))}
    broken = Found("/tasks/a.json", error="invalid task config: spec: Field required", key="shop/a")

    assert decide([broken], running, now=0.0) == [
        Report("/tasks/a.json", "invalid task config: spec: Field required", "shop/a")
    ]


def test_a_second_file_for_the_same_task_is_reported_and_the_first_one_wins() -> None:
    first, second = Found("/tasks/1.json", task("a")), Found("/tasks/2.json", task("a", trigger=9))

    assert decide([first, second], {}, now=0.0) == [
        Report("/tasks/2.json", "another config file holds this task already", "shop/a"),
        Start("shop/a", task("a")),
    ]


@pytest.mark.parametrize(("failures", "seconds"), [(1, 2.0), (2, 4.0), (3, 8.0), (8, 256.0), (9, 300.0)])
def test_the_backoff_doubles_with_each_failure_in_a_row_up_to_its_cap(failures: int, seconds: float) -> None:
    assert backoff(failures) == seconds


def write(path: Path, config: TaskConfig) -> None:
    path.write_text(config.to_json(), encoding="utf-8")


def mounted_config_map(directory: Path, files: dict[str, TaskConfig], version: str) -> None:
    """The layout the kubelet writes for a mounted ConfigMap: the files in a hidden timestamped
    directory, ``..data`` pointing at it, each visible name a symlink through ``..data``; an update
    writes a new directory and swaps ``..data`` atomically."""
    data = directory / f"..{version}"
    data.mkdir(parents=True)
    for name, config in files.items():
        write(data / name, config)
    swap = directory / "..data_tmp"
    swap.symlink_to(data.name)
    os.replace(swap, directory / "..data")
    for name in files:
        if not (directory / name).is_symlink():
            (directory / name).symlink_to(f"..data/{name}")


def keys(items: list[Found]) -> list[Any]:
    return [(Path(item.source).name, item.config.name if item.config else item.error) for item in items]


def test_a_mounted_config_map_is_read_through_its_symlinks_and_dot_entries_are_never_configs(
    tmp_path: Path,
) -> None:
    mounted_config_map(tmp_path, {"a.json": task("a"), "b.json": task("b")}, "2026_11_29_12_00_00")
    (tmp_path / ".c.json.tmp").write_text('{"half": ', encoding="utf-8")  # a file still being written
    reader = ConfigReader([tmp_path])

    assert [path.name for path in config_files(tmp_path)] == ["a.json", "b.json"]
    assert keys(reader.read()) == [("a.json", "a"), ("b.json", "b")]

    mounted_config_map(tmp_path, {"a.json": task("a", trigger=7), "b.json": task("b")}, "2026_11_29_12_01_00")

    configs = {Path(item.source).name: item.config for item in reader.read()}
    assert configs == {"a.json": task("a", trigger=7), "b.json": task("b")}


def test_the_reader_parses_a_file_again_only_once_it_changed(tmp_path: Path) -> None:
    write(tmp_path / "a.json", task("a"))
    reader = ConfigReader([tmp_path])
    first = reader.read()

    assert reader.read()[0] is first[0]  # the same parse, not a new one
    write(tmp_path / "a.json", task("a", trigger=7))
    os.utime(tmp_path / "a.json", ns=(1, 1))  # a rewrite within the clock's resolution still shows
    assert reader.read()[0].config == task("a", trigger=7)


def test_a_broken_rewrite_names_the_file_and_the_task_it_held(tmp_path: Path) -> None:
    write(tmp_path / "a.json", task("a"))
    reader = ConfigReader([tmp_path], [tmp_path / "fixed.json"])
    reader.read()
    (tmp_path / "a.json").write_text("{not json", encoding="utf-8")

    broken, missing = reader.read()

    assert (broken.key, broken.config) == ("shop/a", None)
    assert broken.error is not None and broken.error.startswith("the task config is not JSON")
    assert (missing.source, missing.key) == (str(tmp_path / "fixed.json"), None)
    assert missing.error is not None and "No such file or directory" in missing.error


def test_a_file_that_was_removed_holds_no_task_when_it_comes_back_broken(tmp_path: Path) -> None:
    write(tmp_path / "a.json", task("a"))
    reader = ConfigReader([tmp_path])
    reader.read()
    (tmp_path / "a.json").unlink()
    assert reader.read() == []  # its task stops: the config is gone
    (tmp_path / "a.json").write_text("{not json", encoding="utf-8")

    (broken,) = reader.read()

    assert (broken.key, broken.config) == (None, None)  # reported as a file, not against the stopped task


def test_a_directory_that_does_not_exist_yet_holds_no_configs(tmp_path: Path) -> None:
    assert ConfigReader([tmp_path / "later"]).read() == []


def test_the_host_refuses_to_start_without_a_config_file_or_directory(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit_:
        host.main(["--master", "local[1]"])

    assert exit_.value.code == 2
    assert "give at least one --task-config or --task-dir" in capsys.readouterr().err
