"""SAS keys: a key declared without a value gets one of the namespace's own, kept for the life of the data
dir; a value in the config is used as given; the well-known shared key only where the config opts in."""

from __future__ import annotations

import base64
import stat
from pathlib import Path

import pytest
import yaml
from azure.servicebus import ServiceBusClient, ServiceBusMessage
from pydantic import ValidationError

from federator_contract.emulatorconfig import DEFAULT_KEY_NAME, DEFAULT_KEY_VALUE, EmulatorConfig
from federator_emulator.saskeys import SECRET_FILE_NAME, load_or_create_secret
from federator_emulator.server import run_forever, write_ready_file
from federator_emulator.testing import EmulatorFactory

TWO = {
    "namespaces": [{"name": "east", "queues": [{"name": "q"}]}, {"name": "west", "queues": [{"name": "q"}]}]
}


def test_each_namespace_gets_a_key_of_its_own_shaped_like_azures(emulator_factory: EmulatorFactory) -> None:
    emu = emulator_factory(TWO)
    east, west = emu.key("east"), emu.key("west")
    assert east != west and DEFAULT_KEY_VALUE not in (east, west)
    assert len(base64.b64decode(east, validate=True)) == 32  # 44 base64 characters, as Azure's keys
    assert f"SharedAccessKey={east};" in emu.connection_string("east")
    ready = emu.ready_document()["namespaces"]
    assert ready["west"]["connectionStrings"][DEFAULT_KEY_NAME] == emu.connection_string("west")
    with (
        ServiceBusClient.from_connection_string(emu.connection_string("west")) as client,
        client.get_queue_sender("q") as sender,
    ):
        sender.send_messages(ServiceBusMessage("the namespace's own key works"))


def test_keys_outlive_a_restart_on_the_same_data_dir_and_not_an_emulator_without_one(
    emulator_factory: EmulatorFactory, tmp_path: Path
) -> None:
    first = emulator_factory(TWO, data_dir=tmp_path)
    keys = {name: first.key(name) for name in ("east", "west")}
    first.stop()
    again = emulator_factory(TWO, data_dir=tmp_path)
    assert {name: again.key(name) for name in ("east", "west")} == keys
    assert emulator_factory(TWO).key("east") != emulator_factory(TWO).key("east")


def test_the_secret_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    secret = load_or_create_secret(tmp_path)
    assert stat.S_IMODE((tmp_path / SECRET_FILE_NAME).stat().st_mode) == 0o600
    assert load_or_create_secret(tmp_path) == secret


def test_the_ready_file_that_carries_the_keys_is_readable_by_its_owner_only(
    emulator_factory: EmulatorFactory, tmp_path: Path
) -> None:
    ready = tmp_path / "ready.json"
    write_ready_file(ready, emulator_factory(TWO).ready_document())
    assert stat.S_IMODE(ready.stat().st_mode) == 0o600


def test_the_emulator_does_not_start_on_a_damaged_secret_and_says_which_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config, data = tmp_path / "emulator.yaml", tmp_path / "data"
    config.write_text(yaml.safe_dump(TWO))
    data.mkdir()
    (data / SECRET_FILE_NAME).write_bytes(b"short")
    assert run_forever(config, data, ready_file=None) == 1
    assert f"{data / SECRET_FILE_NAME} does not hold a 32-byte secret" in caplog.text


def test_a_value_in_the_config_is_used_and_a_key_without_one_gets_its_own(
    emulator_factory: EmulatorFactory,
) -> None:
    keys = [{"name": "given", "key": "my-own-value"}, {"name": "sender", "rights": ["Send"]}]
    emu = emulator_factory({"namespaces": [{"name": "ns", "keys": keys}]})
    assert emu.key("ns", "given") == "my-own-value"
    assert emu.key("ns", "sender") not in ("my-own-value", DEFAULT_KEY_VALUE)


def test_the_shared_well_known_key_is_an_explicit_opt_in(emulator_factory: EmulatorFactory) -> None:
    emu = emulator_factory({**TWO, "sharedDefaultKey": True})
    assert emu.key("east") == emu.key("west") == DEFAULT_KEY_VALUE


def test_two_keys_of_one_name_are_refused() -> None:
    keys = [{"name": "app"}, {"name": "app", "key": "x"}]
    with pytest.raises(ValidationError, match=r"namespace 'ns': keys: duplicate key names \['app'\]"):
        EmulatorConfig.model_validate({"namespaces": [{"name": "ns", "keys": keys}]})
