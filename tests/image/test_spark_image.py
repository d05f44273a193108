"""The Spark image, run as a node would run it (read-only root, uid 185, /tmp an emptyDir, the checkpoint a
volume): its entrypoint's driver mode runs the replication app in local mode against the emulator on the
host, and its driver and executor modes build exactly the commands Spark's Kubernetes contract asks for."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from azure.eventhub import EventData, EventHubProducerClient

from federator_spark.spark_settings import FILE_SYSTEM_JAR
from support.images import ImageRoot

pytestmark = [pytest.mark.images, pytest.mark.jvm]

SPARK_HOME = "/opt/venv/lib/python3.11/site-packages/pyspark"
SPARK_JARS = SPARK_HOME.removeprefix("/") + "/jars"
JAVA = "/opt/java/bin/java"
TINI = ["/usr/bin/tini", "-s", "--"]
EVENTS = 3000
HUBS = {"namespaces": [{"name": "ns1", "eventHubs": [{"name": "src", "partitionCount": 2},
                                                      {"name": "dst", "partitionCount": 2}]}]}


def dry_run(image: ImageRoot, args: list[str], env: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    code, output = image.run([*image.config.entrypoint, *args],
                             env={**env, "FEDERATOR_ENTRYPOINT_DRY_RUN": "1"}, log_name="dry-run")
    assert code == 0, output
    lines = output.splitlines()
    exported = dict(line[4:].split("=", 1) for line in lines if line.startswith("env "))
    return exported, [line[4:] for line in lines if line.startswith("arg ")]


def test_the_image_runs_the_entrypoint_as_uid_185(spark_image):
    config = spark_image.config
    assert config.entrypoint == ["/opt/entrypoint.sh"]
    assert config.user == "185:185"
    assert config.working_dir == "/opt/federator"
    assert config.env["SPARK_HOME"] == SPARK_HOME
    assert config.env["JAVA_HOME"] == "/opt/java"
    assert config.env["PYSPARK_PYTHON"] == config.env["PYSPARK_DRIVER_PYTHON"] == "/opt/venv/bin/python"


# What Spark 4.3's submission client puts in a driver pod for a Python app (DriverCommandFeatureStep,
# BasicDriverFeatureStep): the `driver` argument, the properties file it mounts, PythonRunner, the app file
# and its arguments; the pod IP as SPARK_DRIVER_BIND_ADDRESS.
DRIVER_ARGS = ["driver", "--properties-file", "/opt/spark/conf/spark.properties",
               "--class", "org.apache.spark.deploy.PythonRunner",
               "local:///opt/federator/replicate.py", "--task-config", "/etc/federator/task/task.json"]
DRIVER_ENV = {"SPARK_DRIVER_BIND_ADDRESS": "10.244.1.7", "SPARK_CONF_DIR": "/opt/spark/conf",
              "SPARK_USER": "spark", "SPARK_APPLICATION_ID": "spark-4f1e",
              "SPARK_LOCAL_DIRS": "/var/data/spark-1"}


def test_driver_mode_is_spark_submit_in_client_mode_bound_to_the_pod_ip(spark_image):
    exported, command = dry_run(spark_image, DRIVER_ARGS, DRIVER_ENV)

    assert exported == {}
    assert command == [
        *TINI, f"{SPARK_HOME}/bin/spark-submit",
        "--conf", "spark.driver.bindAddress=10.244.1.7",
        "--conf", "spark.executorEnv.SPARK_DRIVER_POD_IP=10.244.1.7",
        "--deploy-mode", "client",
        *DRIVER_ARGS[1:],
    ]


# What BasicExecutorFeatureStep (Spark 4.3) sets in an executor pod: the `executor` argument and these
# variables, with spark.executor.extraJavaOptions and the executor-startup confs as SPARK_JAVA_OPT_<n>.
EXECUTOR_ENV = {
    "SPARK_USER": "spark",
    "SPARK_DRIVER_URL": "spark://CoarseGrainedScheduler@orders-driver-svc.team-a.svc:7078",
    "SPARK_EXECUTOR_CORES": "1",
    "SPARK_EXECUTOR_MEMORY": "1024m",
    "SPARK_APPLICATION_ID": "spark-4f1e",
    "SPARK_CONF_DIR": "/opt/spark/conf",
    "SPARK_EXECUTOR_ID": "3",
    "SPARK_RESOURCE_PROFILE_ID": "0",
    "SPARK_EXECUTOR_POD_IP": "10.244.2.9",
    "SPARK_EXECUTOR_POD_NAME": "orders-exec-3",
    "SPARK_LOCAL_DIRS": "/var/data/spark-1",
    "SPARK_DRIVER_POD_IP": "10.244.1.7",
    **{f"SPARK_JAVA_OPT_{n}": f"-Dspark.option{n}=value {n}" for n in range(12)},
}


def test_executor_mode_runs_the_kubernetes_executor_backend_from_the_pod_environment(spark_image):
    exported, command = dry_run(spark_image, ["executor"], EXECUTOR_ENV)

    assert exported == {}
    assert command == [
        *TINI, JAVA,
        *(f"-Dspark.option{n}=value {n}" for n in range(12)),  # in number order: 2 before 10
        "-Xms1024m", "-Xmx1024m",
        "-cp", f"/opt/spark/conf:{SPARK_HOME}/jars/*",
        "org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend",
        "--driver-url", "spark://CoarseGrainedScheduler@orders-driver-svc.team-a.svc:7078",
        "--executor-id", "3", "--cores", "1", "--app-id", "spark-4f1e", "--hostname", "10.244.2.9",
        "--resourceProfileId", "0", "--podName", "orders-exec-3",
    ]


def test_executor_mode_adds_extra_class_and_library_paths(spark_image):
    env = {**EXECUTOR_ENV, "SPARK_CLASSPATH": "/opt/extra/*", "SPARK_EXECUTOR_LIBRARY_PATH": "/opt/native",
           "HADOOP_CONF_DIR": "/etc/hadoop/conf"}
    exported, command = dry_run(spark_image, ["executor"], env)

    assert exported == {"LD_LIBRARY_PATH": "/opt/native"}
    classpath = command[command.index("-cp") + 1]
    assert classpath == f"/opt/spark/conf:/etc/hadoop/conf:/opt/extra/*:{SPARK_HOME}/jars/*"


@pytest.mark.parametrize("missing", ["SPARK_DRIVER_URL", "SPARK_EXECUTOR_ID", "SPARK_EXECUTOR_MEMORY",
                                     "SPARK_RESOURCE_PROFILE_ID", "SPARK_EXECUTOR_POD_NAME"])
def test_executor_mode_names_a_missing_variable(spark_image, missing):
    env = {k: v for k, v in EXECUTOR_ENV.items() if k != missing}
    code, output = spark_image.run([*spark_image.config.entrypoint, "executor"], env=env, log_name="missing")
    assert code == 64
    assert f"{missing} is not set" in output


def test_the_decommission_hook_signals_the_executor_and_waits_for_it_to_exit(spark_image):
    # A stand-in executor: the executor's main class among its arguments, exiting 2 s after SIGPWR.
    executor = ("import signal, sys, time;"
                " signal.signal(signal.SIGPWR, lambda *_: (time.sleep(2), sys.exit(0))); time.sleep(60)")
    main_class = "org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend"
    script = (f"python3.11 -c \"{executor}\" {main_class} & sleep 1;"
              " start=$(date +%s); /opt/decom.sh; echo waited $(( $(date +%s) - start ))")
    code, output = spark_image.run(["bash", "-c", script], log_name="decom")
    assert code == 0, output
    assert "decom: asking executor" in output and "has exited" in output
    assert int(output.split("waited ")[1].split()[0]) >= 2, output  # it waited for the exit


def test_a_uid_without_a_passwd_entry_still_has_a_user_name(spark_image):
    code, output = spark_image.run(
        [*spark_image.config.entrypoint, "sh", "-c", "id -un; java -XshowSettings:properties -version 2>&1"],
        user="123456:0", log_name="random-uid",
    )
    assert code == 0, output
    assert output.splitlines()[0] == "spark"
    assert "user.name = spark" in output


def test_nothing_to_install_with_and_no_compiler(spark_image):
    assert spark_image.installers_and_compilers() == ([], ["apt-get"])


def target_count(connection_string: str) -> int:
    with EventHubProducerClient.from_connection_string(connection_string, eventhub_name="dst") as client:
        return sum(client.get_partition_properties(p)["last_enqueued_sequence_number"] + 1 for p in "01")


def send(connection_string: str, count: int) -> None:
    with EventHubProducerClient.from_connection_string(connection_string, eventhub_name="src") as producer:
        for start in range(0, count, 500):
            batch = producer.create_batch()
            for i in range(start, min(start + 500, count)):
                batch.add(EventData(f"event {i}"))
            producer.send_batch(batch)


def test_the_driver_replicates_in_local_mode_against_the_emulator_and_loses_nothing(
    spark_image: ImageRoot, emulator_factory: Any, tmp_path: Path, budget: dict[str, float]
):
    emulator = emulator_factory(HUBS)
    connection_string = emulator.connection_string("ns1")
    send(connection_string, EVENTS)
    task_dir, checkpoint = tmp_path / "task", tmp_path / "checkpoint"
    task_dir.mkdir()
    checkpoint.mkdir()
    checkpoint.chmod(0o777)  # the volume the pod's fsGroup would make writable for uid 185
    endpoint = {"connection": {"emulator": {"namespace": "ns1"}}}
    (task_dir / "ns1").write_text(connection_string)  # mounted beside task.json, as a Secret would be
    (task_dir / "task.json").write_text(json.dumps({
        "apiVersion": "federator.io/v1alpha1",
        "kind": "ReplicationTask",
        "metadata": {"name": "orders", "namespace": "default", "generation": 1},
        "spec": {"source": {"eventHub": {**endpoint, "eventHubName": "src"}},
                 "targets": [{"name": "dst", "eventHub": {**endpoint, "eventHubName": "dst"}}]},
        "checkpointLocation": "file:///var/lib/federator/checkpoint/orders",
        "statusFile": "/var/lib/federator/checkpoint/status.json",
        "secretEnv": {},
        "emulatorConnectionFiles": {"ns1": "/etc/federator/task/ns1"},
    }))

    started = time.monotonic()
    run = spark_image.start(
        [*spark_image.config.entrypoint, "driver", "--master", "local[2]", "--conf", "spark.ui.enabled=false",
         "local:///opt/federator/replicate.py", "--task-config", "/etc/federator/task/task.json",
         "--available-now"],
        env={"SPARK_DRIVER_BIND_ADDRESS": "127.0.0.1", "SPARK_LOCAL_IP": "127.0.0.1"},
        binds={"/etc/federator/task": task_dir},
        writable={"/var/lib/federator/checkpoint": checkpoint},
        log_name="replicate",
    )
    first_event = None
    while run.process.poll() is None and time.monotonic() - started < 300:
        if first_event is None and target_count(connection_string) > 0:
            first_event = time.monotonic() - started
        time.sleep(0.5)
    code = run.wait(timeout=10)
    total = time.monotonic() - started

    assert code == 0, run.output()[-5000:]
    assert target_count(connection_string) == EVENTS  # none lost, none twice
    status = json.loads((checkpoint / "status.json").read_text())
    assert (status["eventsIn"], status["targets"]["dst"]["eventsOut"]) == (EVENTS, EVENTS), status
    # On the app's local file system (spark-apps/jvm): its jar among Spark's, so spark_settings turned it on.
    assert (spark_image.root / SPARK_JARS / FILE_SYSTEM_JAR).is_file()
    assert f"{FILE_SYSTEM_JAR} is missing" not in run.output()
    budget["sparkFirstEventSeconds"] = first_event or total
    budget["sparkRunSeconds"] = total
