"""The translation plan the app builds from its task config: the hosts and hubs the checkpoints' blob
names carry (the task's connections, or the hosts the consumers name), and where the stores are."""

from __future__ import annotations

from typing import Any

import pytest

from federator_contract.taskconfig import TaskConfig, TaskConfigError
from federator_spark.config import checkpoint_layout
from federator_spark.translation.planning import translation_plan
from federator_spark.translation.translator import TranslationPlan
from support.connections import write_connection_files

PRIMARY = (
    "Endpoint=sb://127.0.0.1:5673;SharedAccessKeyName=k;SharedAccessKey=a2V5;UseDevelopmentEmulator=true"
)
AZURITE = "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=a2V5;"
SECONDARY = (
    "Endpoint=sb://127.0.0.1:5674;SharedAccessKeyName=k;SharedAccessKey=a2V5;UseDevelopmentEmulator=true"
)


def config(tmp_path, **translation: Any) -> TaskConfig:
    return TaskConfig.from_raw(
        {
            "metadata": {"name": "orders", "namespace": "default"},
            "spec": {
                "source": {
                    "eventHub": {"connection": {"emulator": {"namespace": "a"}}, "eventHubName": "orders"}
                },
                "targets": [
                    {
                        "name": "dlq",
                        "serviceBus": {"connection": {"emulator": {"namespace": "b"}}, "queueName": "q"},
                    },
                    {
                        "name": "copy",
                        "eventHub": {"connection": {"emulator": {"namespace": "b"}}, "eventHubName": "copy"},
                    },
                ],
                "checkpointTranslation": {
                    "consumerGroups": ["orders-app"],
                    "checkpointStore": {"containerName": "checkpoints", "connection": {"emulator": {}}},
                    **translation,
                },
            },
            "checkpointLocation": str(tmp_path / "checkpoint"),
            "emulatorConnectionFiles": write_connection_files(
                tmp_path / "connections", {"a": PRIMARY, "b": SECONDARY, "azurite": AZURITE}
            ),
            "emulatorBlobConnectionFile": str(tmp_path / "connections" / "azurite"),
            "secretEnv": {"storage/connectionString": "FEDERATOR_SECRET_storage__connectionString"},
        }
    )


def planned(config: TaskConfig) -> TranslationPlan | None:
    return translation_plan(config, checkpoint_layout(config))


def test_the_checkpoints_are_named_by_the_hosts_the_clients_connect_to(tmp_path) -> None:
    plan = planned(config(tmp_path))
    assert plan is not None
    assert (plan.source.fully_qualified_namespace, plan.source.event_hub) == ("127.0.0.1:5673", "orders")
    assert (plan.target.fully_qualified_namespace, plan.target.event_hub) == ("127.0.0.1:5674", "copy")
    assert plan.origin_prefix == "127.0.0.1:5673/orders/"  # what the task writes into repl-source-id
    assert plan.source_store == plan.target_store
    assert plan.source_store.connection_string_file == str(tmp_path / "connections" / "azurite")
    assert plan.state_dir == str(tmp_path / "checkpoint" / "federator" / "translation")
    assert plan.report_file == str(
        tmp_path / "checkpoint" / "federator" / "translation.json"
    )  # beside the status


def test_hosts_as_the_consumers_name_them_and_a_second_store(tmp_path) -> None:
    plan = planned(
        config(
            tmp_path,
            sourceFullyQualifiedNamespace="contoso-weu.servicebus.windows.net",
            targetFullyQualifiedNamespace="contoso-neu.servicebus.windows.net",
            targetCheckpointStore={"containerName": "neu", "connection": {"secretRef": {"name": "storage"}}},
        )
    )
    assert plan is not None
    assert plan.source.fully_qualified_namespace == "contoso-weu.servicebus.windows.net"
    assert plan.target.fully_qualified_namespace == "contoso-neu.servicebus.windows.net"
    assert plan.origin_prefix == "127.0.0.1:5673/orders/"  # the task's own identity of the source
    assert plan.target_store.container == "neu"
    assert plan.target_store.connection_string_env == "FEDERATOR_SECRET_storage__connectionString"


def test_azurite_exists_in_local_mode_only(tmp_path) -> None:
    raw = config(tmp_path).model_copy(update={"emulator_blob_connection_file": None})
    with pytest.raises(TaskConfigError, match="checkpointStore: Azurite exists in local mode only"):
        planned(raw)
