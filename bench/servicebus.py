"""Service Bus replication: our Spark app on local[2] against a plain SDK forwarding loop, for the two
Service Bus paths users run.

    .venv/bin/python -m bench.servicebus [--messages 20000] [--duration 30] [--rate 500] [--batch-limit N]

* ``all-active``: an all-active pair as a ServiceBusMirror generates it: topic ``orders`` on ``west``,
  subscription ``repl-east`` (rule ``replication IS NULL``, action ``SET replication = 1``) → topic
  ``orders`` on ``east``.
* ``queue-to-hub``: a queue on ``west`` → a 4-partition event hub on ``east``.

For each, in one run: the SDK loop (one process, one thread: peek-lock ``receive_messages`` → one
``send_messages``/``send_batch`` → ``complete_message`` each, the way the azure-messaging-replication
functions forward), then the real ``federator-replication`` query (``availableNow``, on a session
warmed by a small task), then the SDK loop again; the baseline is both SDK runs (bracketing). Each
reads its own copy of the same pre-loaded messages (1 KB): a subscription per runner on the topic, a
queue per runner. Every target is read back: 0 lost, 0 duplicated. Then the latency at ``--rate``
messages/s: a paced producer stamps each message, the task runs with its normal trigger, a consumer on
the target records receive time - send time (events sent after ``--warmup`` s count); beside it, the
consumer's own floor (the same producer straight into the target, no task between). CPU of the
emulator is measured beside each run: its Service Bus side (peek-lock receive + complete) bounds both.
The last line printed is a JSON summary.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient
from azure.servicebus import ServiceBusClient, ServiceBusMessage, ServiceBusReceiveMode

from bench.processes import Emulators, RssSampler, cpu_seconds, emulator_processes, load, tree_cpu_seconds
from bench.replication import identities, spark_session
from bench.replication_latency import StepCounter, epoch, percentile, phases_p50
from bench.tasks import (
    EVENT_SIZE,
    ID_WIDTH,
    PARTITIONS,
    ROOT,
    body,
    connection_file,
    run_available_now,
    start_task,
)
from federator_contract.api.replicationtask import ReplicationTaskSpec
from federator_contract.taskconfig import TaskConfig, TaskMetadata

logger = logging.getLogger("bench")

RUNNERS = ("spark", "sdk-before", "sdk-after")
RULE = {"name": "replication", "sqlFilter": "replication IS NULL", "sqlAction": "SET replication = 1"}
SEND_TIME = "bench-send-time"


def emulator_configs() -> list[dict[str, Any]]:
    """West (sources) and east (targets), each in an emulator process of its own."""
    subscription = {"rules": [RULE], "lockDurationSeconds": 60}
    west = {
        "name": "west",
        "topics": [
            {"name": "orders", "subscriptions": [{"name": f"repl-{r}", **subscription} for r in RUNNERS]},
            {"name": "lat", "subscriptions": [{"name": "repl-east", **subscription}]},
        ],
        "queues": [{"name": f"q-{r}"} for r in RUNNERS] + [{"name": "q-lat"}],
    }
    east = {
        "name": "east",
        "topics": [{"name": f"orders-{r}", "subscriptions": [{"name": "all"}]} for r in RUNNERS]
        + [{"name": "lat", "subscriptions": [{"name": "all"}]}],
        "eventHubs": [{"name": f"out-{r}", "partitionCount": PARTITIONS} for r in (*RUNNERS, "lat")],
    }
    return [{"namespaces": [west]}, {"namespaces": [east]}]


# ---------------------------------------------------------------------------------------- messages


def message(index: int) -> ServiceBusMessage:
    return ServiceBusMessage(body(index), message_id=f"m-{index}", application_properties={"n": index})


def preload(cs: str, entity: str, total: int, *, topic: bool) -> None:
    with ServiceBusClient.from_connection_string(cs) as client:
        sender = client.get_topic_sender(entity) if topic else client.get_queue_sender(entity)
        with sender:
            for first in range(0, total, 100):
                sender.send_messages([message(i) for i in range(first, min(total, first + 100))])


def drain_subscription(cs: str, topic: str, subscription: str) -> Counter[bytes]:
    """Every message's identity in a subscription (received and deleted)."""
    seen: Counter[bytes] = Counter()
    with ServiceBusClient.from_connection_string(cs) as client:
        receiver = client.get_subscription_receiver(
            topic, subscription, receive_mode=ServiceBusReceiveMode.RECEIVE_AND_DELETE, prefetch_count=500
        )
        with receiver:
            while batch := receiver.receive_messages(max_message_count=500, max_wait_time=3):
                for received in batch:
                    seen[b"".join(received.body)[:ID_WIDTH]] += 1
    return seen


def counts(seen: Counter[bytes], expected: int) -> dict[str, Any]:
    wanted = {b"%0*d" % (ID_WIDTH, i) for i in range(expected)}
    result = {
        "count": sum(seen.values()),
        "lost": len(wanted - set(seen)),
        "duplicated": sum(n - 1 for n in seen.values()),
    }
    return {**result, "ok": result["lost"] == result["duplicated"] == 0 and result["count"] == expected}


# ---------------------------------------------------------------------------------------- baseline


def sdk_forward(source_cs: str, target_cs: str, scenario: str, runner: str, total: int) -> float:
    """The plain forwarding loop: receive up to 500 (peek-lock), send them on in one call, complete each.
    Seconds until ``total`` were forwarded."""
    forwarded = 0
    started = time.perf_counter()
    with ServiceBusClient.from_connection_string(source_cs) as source:
        if scenario == "all-active":
            receiver = source.get_subscription_receiver("orders", f"repl-{runner}", prefetch_count=500)
            target_client: Any = ServiceBusClient.from_connection_string(target_cs)
            sender = target_client.get_topic_sender(f"orders-{runner}")
        else:
            receiver = source.get_queue_receiver(f"q-{runner}", prefetch_count=500)
            target_client = EventHubProducerClient.from_connection_string(
                target_cs, eventhub_name=f"out-{runner}"
            )
            sender = target_client
        with receiver, target_client:
            while forwarded < total:
                batch = receiver.receive_messages(max_message_count=500, max_wait_time=5)
                if not batch:
                    raise RuntimeError(f"SDK loop: {forwarded} of {total} forwarded, then nothing came")
                if scenario == "all-active":
                    out = sender.create_message_batch()
                    for received in batch:
                        out.add_message(
                            ServiceBusMessage(
                                b"".join(received.body),
                                message_id=received.message_id,
                                application_properties=received.application_properties,
                            )
                        )
                    sender.send_messages(out)
                else:
                    out = sender.create_batch()
                    for received in batch:
                        data = EventData(b"".join(received.body))
                        data.properties = dict(received.application_properties or {})
                        out.add(data)
                    sender.send_batch(out)
                for received in batch:
                    receiver.complete_message(received)
                forwarded += len(batch)
            if scenario == "all-active":
                sender.close()
    return time.perf_counter() - started


# ---------------------------------------------------------------------------------------- spark


def task_config(
    workdir: Path,
    emus: Emulators,
    scenario: str,
    source: str,
    target: str,
    subscription: str = "repl-east",
    batch_limit: int | None = None,
) -> TaskConfig:
    def connection(namespace: str) -> dict[str, Any]:
        return {"emulator": {"namespace": namespace}}

    limit = {"maxMessagesPerBatch": batch_limit} if batch_limit is not None else {}
    if scenario == "all-active":
        spec = {
            "source": {
                "serviceBus": {
                    "connection": connection("west"),
                    "topicName": source,
                    "subscriptionName": subscription,
                    **limit,
                }
            },
            "targets": [
                {"name": "east", "serviceBus": {"connection": connection("east"), "topicName": target}}
            ],
        }
    else:
        spec = {
            "source": {"serviceBus": {"connection": connection("west"), "queueName": source, **limit}},
            "targets": [
                {"name": "east", "eventHub": {"connection": connection("east"), "eventHubName": target}}
            ],
        }
    name = f"{scenario}-{source}-{target}"
    return TaskConfig(
        metadata=TaskMetadata(name=name, namespace="bench", generation=1),
        spec=ReplicationTaskSpec.model_validate(spec),
        checkpoint_location=f"file://{workdir / ('checkpoint-' + name)}",
        emulator_connection_files={
            ns: connection_file(workdir, ns, emus.namespaces[ns]) for ns in ("west", "east")
        },
        status_file=str(workdir / f"status-{name}.json"),
    )


def spark_entities(scenario: str) -> tuple[str, str, str]:
    """The Spark runner's source entity, target entity and (all-active) subscription."""
    if scenario == "all-active":
        return "orders", "orders-spark", "repl-spark"
    return "q-spark", "out-spark", ""


# ---------------------------------------------------------------------------------------- latency


@contextlib.contextmanager
def latency_sender(
    source_cs: str, target_cs: str, scenario: str, direct: bool
) -> Iterator[Callable[[list[tuple[int, str]]], None]]:
    """Sends (index, send time) stamped messages into the scenario's latency source, or, ``direct``,
    straight into its target."""
    if direct and scenario == "queue-to-hub":
        with EventHubProducerClient.from_connection_string(target_cs, eventhub_name="out-lat") as producer:

            def send_events(stamped: list[tuple[int, str]]) -> None:
                batch = producer.create_batch()
                for index, sent in stamped:
                    data = EventData(body(index))
                    data.properties = {SEND_TIME: sent}
                    batch.add(data)
                producer.send_batch(batch)

            yield send_events
        return
    with ServiceBusClient.from_connection_string(target_cs if direct else source_cs) as client:
        sender = (
            client.get_topic_sender("lat") if scenario == "all-active" else client.get_queue_sender("q-lat")
        )
        with sender:

            def send_messages(stamped: list[tuple[int, str]]) -> None:
                batch = []
                for index, sent in stamped:
                    item = message(index)
                    item.application_properties = {SEND_TIME: sent}
                    batch.append(item)
                sender.send_messages(batch)

            yield send_messages


def latency_client(
    source_cs: str, target_cs: str, scenario: str, rate: int, duration: float, direct: bool
) -> dict[str, Any]:
    """Child process: pace ``rate`` messages/s into the scenario's latency source (``direct``: into its
    target, which measures the consumer alone), receive from its target."""
    arrivals: list[tuple[float, float]] = []
    stop = threading.Event()

    def record(sent: Any) -> None:
        if sent is not None:
            sent = float(sent.decode() if isinstance(sent, bytes) else sent)
            arrivals.append((sent, (time.time() - sent) * 1000))

    def receive_topic() -> None:
        with ServiceBusClient.from_connection_string(target_cs) as client:
            receiver = client.get_subscription_receiver(
                "lat", "all", receive_mode=ServiceBusReceiveMode.RECEIVE_AND_DELETE, prefetch_count=500
            )
            with receiver:
                while not stop.is_set():
                    # One message a call: a call holds its first message for 0.2 s gathering more
                    # (the SDK's further-pull window) unless max_message_count is reached first.
                    for received in receiver.receive_messages(max_message_count=1, max_wait_time=0.2):
                        record((received.application_properties or {}).get(SEND_TIME.encode()))

    def receive_hub() -> None:
        consumer = EventHubConsumerClient.from_connection_string(
            target_cs, "$Default", eventhub_name="out-lat", socket_timeout=0.01
        )

        def on_batch(_context: Any, events: list[EventData]) -> None:
            for event in events:
                record((event.properties or {}).get(SEND_TIME.encode()))

        thread = threading.Thread(
            target=consumer.receive_batch,
            kwargs={"on_event_batch": on_batch, "starting_position": "@latest", "prefetch": 1000},
            daemon=True,
        )
        thread.start()
        stop.wait()
        consumer.close()
        thread.join(30)

    receiving = threading.Thread(
        target=receive_topic if scenario == "all-active" else receive_hub, daemon=True
    )
    receiving.start()
    time.sleep(2)
    start, sent = time.time(), 0
    per_tick = max(1, round(rate * 0.02))
    with latency_sender(source_cs, target_cs, scenario, direct) as send:
        began = time.monotonic()
        while time.monotonic() - began < duration:
            send([(sent + i, repr(time.time())) for i in range(per_tick)])
            sent += per_tick
            delay = began + sent / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        actual = sent / (time.monotonic() - began)
    deadline = time.monotonic() + 60
    while len(arrivals) < sent and time.monotonic() < deadline:
        time.sleep(0.1)
    stop.set()
    receiving.join(30)
    return {"start": start, "sent": sent, "rate": actual, "arrivals": [[s - start, ms] for s, ms in arrivals]}


FLOOR_SECONDS, FLOOR_WARMUP = 10.0, 2.0


def run_latency_client(
    emus: Emulators, scenario: str, args: argparse.Namespace, seconds: float, *, direct: bool
) -> dict[str, Any]:
    command = [sys.executable, "-m", "bench.servicebus", "--latency-client", scenario]
    command += [emus.namespaces["west"], emus.namespaces["east"], "--rate", str(args.rate)]
    command += ["--duration", str(seconds)] + (["--direct"] if direct else [])
    output = subprocess.run(
        command, cwd=ROOT, check=True, capture_output=True, text=True, timeout=seconds + 180
    )
    result: dict[str, Any] = json.loads(output.stdout.strip().splitlines()[-1])
    return result


def latencies(result: dict[str, Any], warmup: float) -> dict[str, Any]:
    arrivals = [(at, ms) for at, ms in result["arrivals"] if at >= warmup]
    measured = sorted(ms for _, ms in arrivals)
    return {
        "sent": result["sent"],
        "received": len(result["arrivals"]),
        "rate": round(result["rate"]),
        "measured_messages": len(measured),
        "p50_ms": percentile(measured, 0.50),
        "p99_ms": percentile(measured, 0.99),
        "max_ms": measured[-1] if measured else None,
        # Where a p99 came from: a stall (many slow messages sent in one second) or a spread; seconds
        # after the measuring began, as in ``slowest_batches``.
        "over_1s_messages": sum(ms > 1000 for ms in measured),
        "max_sent_at_s": round(max(arrivals, key=lambda a: a[1])[0] - warmup, 1) if arrivals else None,
    }


def slowest_batches(progress: list[dict[str, Any]], measured_from: float) -> list[dict[str, Any]]:
    """The three longest batches Spark kept that started once the latency counted (``measured_from``,
    epoch seconds): when (seconds after it) and their phases."""
    kept = [(epoch(p["timestamp"]) - measured_from, p["durationMs"]) for p in progress]
    slow = sorted((k for k in kept if k[0] >= 0), key=lambda k: -k[1].get("triggerExecution", 0))[:3]
    return [{"at_s": round(at, 1), **phases} for at, phases in slow]


def measure_latency(
    spark: Any, workdir: Path, emus: Emulators, scenario: str, args: argparse.Namespace
) -> dict[str, Any]:
    """The task's latency at ``args.rate``, beside the consumer's own (messages sent straight into the
    target, no task between): what the measuring itself adds."""
    floor = latencies(run_latency_client(emus, scenario, args, FLOOR_SECONDS, direct=True), FLOOR_WARMUP)
    source, target = ("lat", "lat") if scenario == "all-active" else ("q-lat", "out-lat")
    config = task_config(workdir, emus, scenario, source, target, batch_limit=args.batch_limit)
    query = start_task(spark, config, available_now=False)
    try:
        while query.lastProgress is None:
            if query.exception() is not None:
                raise RuntimeError(f"the Spark task failed: {query.exception()}")
            time.sleep(0.1)
        assert config.status_file is not None
        steps = StepCounter(config.status_file)
        result = run_latency_client(emus, scenario, args, args.warmup + args.duration, direct=False)
        if query.exception() is not None:
            raise RuntimeError(f"the Spark task failed: {query.exception()}")
        progress = [json.loads(p.json) for p in query.recentProgress]
    finally:
        query.stop()
    return {
        **latencies(result, args.warmup),
        "consumer_floor": {k: floor[k] for k in ("measured_messages", "p50_ms", "p99_ms")},
        "batch_ms_p50": phases_p50(progress),  # the latest batches Spark keeps, warm-up included
        "slowest_batches": slowest_batches(progress, result["start"] + args.warmup),
        "federator_ms_per_batch": steps.per_batch(),
    }


# ---------------------------------------------------------------------------------------- main


def run_scenario(
    spark: Any, workdir: Path, emus: Emulators, scenario: str, args: argparse.Namespace
) -> dict[str, Any]:
    total = args.messages
    west, east = emus.namespaces["west"], emus.namespaces["east"]
    jvm_pid = spark.sparkContext._gateway.proc.pid
    figures: dict[str, dict[str, float]] = {}
    batches: dict[str, Any] = {}
    for runner in ("sdk-before", "spark", "sdk-after"):
        emulator_cpu = cpu_seconds(emus.pids)
        own = cpu_seconds([os.getpid()]) + tree_cpu_seconds(jvm_pid)
        if runner == "spark":
            source, target, subscription = spark_entities(scenario)
            config = task_config(workdir, emus, scenario, source, target, subscription, args.batch_limit)
            seconds, progress = run_available_now(spark, config)
            assert config.status_file is not None
            batches = {
                "batch_ms_p50": phases_p50(progress),
                "federator_ms_per_batch": StepCounter(config.status_file).per_batch(),
            }
        else:
            seconds = sdk_forward(west, east, scenario, runner, total)
        figures[runner] = {
            "rate": total / seconds,
            "cpu_us_per_message": (cpu_seconds([os.getpid()]) + tree_cpu_seconds(jvm_pid) - own)
            / total
            * 1e6,
            "emulator_cpu_us_per_message": (cpu_seconds(emus.pids) - emulator_cpu) / total * 1e6,
        }
        logger.info("%s %s: %.0f messages/s (load %s)", scenario, runner, figures[runner]["rate"], load())
    if scenario == "all-active":
        checks = {r: counts(drain_subscription(east, f"orders-{r}", "all"), total) for r in RUNNERS}
    else:
        checks = {r: counts(identities(east, f"out-{r}", total), total) for r in RUNNERS}
    sdk_seconds = (total / figures["sdk-before"]["rate"] + total / figures["sdk-after"]["rate"]) / 2
    sdk_rate = total / sdk_seconds
    latency = measure_latency(spark, workdir, emus, scenario, args) if args.duration > 0 else None
    return {
        "sdk_messages_per_s": round(sdk_rate),
        "sdk_runs_messages_per_s": [
            round(figures["sdk-before"]["rate"]),
            round(figures["sdk-after"]["rate"]),
        ],
        "spark_messages_per_s": round(figures["spark"]["rate"]),
        "ratio": round(figures["spark"]["rate"] / sdk_rate, 2),
        "cpu_us_per_message": {r: round(f["cpu_us_per_message"], 1) for r, f in figures.items()},
        "emulator_cpu_us_per_message": {
            r: round(f["emulator_cpu_us_per_message"], 1) for r, f in figures.items()
        },
        "read_back": checks,
        # Where a Spark batch's time went: Spark's phases, Federator's steps (receive: reading the spool).
        "spark_batches": batches,
        "latency": latency,
        "load_average": load(),
    }


def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    with emulator_processes(workdir, emulator_configs()) as emus:
        west = emus.namespaces["west"]
        started = time.perf_counter()
        preload(west, "orders", args.messages, topic=True)
        for runner in RUNNERS:
            preload(west, f"q-{runner}", args.messages, topic=False)
        logger.info("pre-loaded in %.1f s (load %s)", time.perf_counter() - started, load())
        spark = spark_session(None, ["spark.sql.streaming.numRecentProgressUpdates=400"])  # a latency run's
        with RssSampler(spark.sparkContext._gateway.proc.pid) as rss:
            # Warm the session with a small task of each kind, as a long-running app would be.
            preload(west, "lat", 200, topic=True)
            preload(west, "q-lat", 200, topic=False)
            for scenario in ("all-active", "queue-to-hub"):
                source, target = ("lat", "lat") if scenario == "all-active" else ("q-lat", "out-lat")
                config = task_config(workdir, emus, scenario, source, target, batch_limit=args.batch_limit)
                run_available_now(spark, config)
            results = {
                scenario: run_scenario(spark, workdir, emus, scenario, args)
                for scenario in ("all-active", "queue-to-hub")
            }
        spark.stop()
    return {
        "messages": args.messages,
        "message_bytes": EVENT_SIZE,
        "scenarios": results,
        "counts_match": all(c["ok"] for r in results.values() for c in r["read_back"].values()),
        "peak_rss_mb": {k: round(v) for k, v in rss.peak.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000, help="pre-loaded messages per runner")
    parser.add_argument("--duration", type=float, default=30, help="latency run seconds (0: skip)")
    parser.add_argument("--rate", type=int, default=500, help="latency run messages/s")
    parser.add_argument("--warmup", type=float, default=15, help="latency run seconds not measured")
    parser.add_argument(
        "--batch-limit", type=int, help="the tasks' maxMessagesPerBatch (default: the task's default)"
    )
    parser.add_argument(
        "--latency-client", nargs=3, metavar=("SCENARIO", "SOURCE_CS", "TARGET_CS"), help=argparse.SUPPRESS
    )
    parser.add_argument("--direct", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.latency_client:
        scenario, source_cs, target_cs = args.latency_client
        result = latency_client(source_cs, target_cs, scenario, args.rate, args.duration, args.direct)
        print(json.dumps(result))
        return
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(message)s")
    logger.setLevel(logging.INFO)
    with tempfile.TemporaryDirectory(prefix="federator-bench-sb-") as tmp:
        summary = run(args, Path(tmp))
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
