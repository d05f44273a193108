"""The Azure SDK for JavaScript's published samples, for ``tools/run-sdk-samples`` (``sdk_samples.py``).

The npm packages do not ship their samples: they are in the SDK repository, at the tag of each pinned
version (``@azure/service-bus_7.9.5``; the versions installed in ``tests/js/node_modules`` by
``tools/install-js-sdks``). The runner takes them from a checkout of that repository (``--js-samples
DIR``) or clones the sample folders at those tags itself (``git``, network); where neither is possible
the JavaScript samples are reported as not run, with the reason. The project keeps no copy of them.

They run unmodified with ``node``: their dependencies (``dotenv``, ``@azure/identity``, ``ws`` …) come
from ``tests/js/node_modules`` through ``NODE_PATH`` (the samples are CommonJS), and they read the same
kind of environment variables as the Python samples, under the names their ``sample.env`` gives.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from federator.local.azurite import ACCOUNT, ACCOUNT_KEY

ROOT = Path(__file__).resolve().parents[1]
MODULES = ROOT / "tests" / "js" / "node_modules"
REPOSITORY = "https://github.com/Azure/azure-sdk-for-js"
# The samples folder of each package's major version, in the SDK repository.
SAMPLES = {
    "@azure/service-bus": "sdk/servicebus/service-bus/samples/v7/javascript",
    "@azure/event-hubs": "sdk/eventhub/event-hubs/samples/v6/javascript",
    "@azure/eventhubs-checkpointstore-blob": "sdk/eventhub/eventhubs-checkpointstore-blob/samples/v2/"
    "javascript",
}
# Samples that need something other than Event Hubs, Service Bus and Blob Storage (checked on the source).
NOT_RUN: tuple[tuple[str, str], ...] = (
    ("IOTHUB_", "needs an Azure IoT Hub"),
    ("process.env.HTTP_PROXY", "needs an HTTP proxy at the address given in HTTP_PROXY"),
)
# The container the checkpoint samples of version 2 name in their code (the runner creates it).
BLOB_CONTAINER = "checkpointstore"
# Samples that create the queue QUEUE_NAME names, as on a namespace without it: the runner's queue of that
# name exists, so they get the name of one that does not.
CREATE_THEIR_QUEUE = ("administrationClient.js",)
# Samples that say which sample to run before them, to find messages to work on: the runner does, with
# the same entities.
RUN_FIRST = {
    "browseMessages.js": "sendMessages.js",
    "receiveMessagesLoop.js": "sendMessages.js",
    "receiveMessagesStreaming.js": "sendMessages.js",
    "exceedMaxDeliveryCount.js": "sendMessages.js",
    "processMessageFromDLQ.js": "movingMessagesToDLQ.js",
}
# What the samples print when something failed (most catch the error, print it and exit 1; the
# long-running ones print it and go on).
FAILURE_MARKS = (
    "Error occurred",
    "Error running sample",
    "Fatal error",
    "Error from error source",
    "Error from source",
    "Error when ",
    "unrecoverable error",
    "Uncaught",
    "Error on partition",
)


@dataclass(frozen=True)
class Fetched:
    """Where the JavaScript samples were put, or why there are none."""

    folders: list[Path]
    missing: str = ""


def installed_version(package: str) -> str:
    manifest = MODULES / package / "package.json"
    if not manifest.exists():
        raise FileNotFoundError(f"{package} is not installed in {MODULES}: run tools/install-js-sdks")
    version: str = json.loads(manifest.read_text())["version"]
    return version


def folder_name(package: str, version: str) -> str:
    return f"js-{package.removeprefix('@azure/')}-{version}"


def fetch(work: Path, checkout: Path | None) -> Fetched:
    """The samples folders of the installed packages' versions under ``work/samples``: copied from
    ``checkout`` (a checkout of the SDK repository) or cloned at each version's tag."""
    folders, problems = [], []
    for package, location in SAMPLES.items():
        try:
            version = installed_version(package)
        except FileNotFoundError as missing:
            problems.append(str(missing))
            continue
        target = work / "samples" / folder_name(package, version)
        if not target.exists():
            problem = _copy(checkout / location, target) if checkout else _clone(work, package, version)
            if problem:
                problems.append(problem)
                continue
        folders.append(target)
    return Fetched(folders, "; ".join(problems))


def _copy(source: Path, target: Path) -> str:
    if not source.is_dir():
        return f"{source} is not a folder of the checkout"
    shutil.copytree(source, target)
    return ""


def _clone(work: Path, package: str, version: str) -> str:
    """A sparse, shallow clone of the SDK repository at ``<package>_<version>`` (its release tag)."""
    if shutil.which("git") is None:
        return "git is not installed"
    clone = work / "js-checkout" / f"{package.removeprefix('@azure/')}-{version}"
    shutil.rmtree(clone, ignore_errors=True)
    tag = f"{package}_{version}"
    clone_at_tag = ["git", "clone", "--quiet", "--depth", "1", "--filter=blob:none", "--sparse", "--branch"]
    steps = [
        [*clone_at_tag, tag, REPOSITORY, str(clone)],
        ["git", "-C", str(clone), "sparse-checkout", "set", SAMPLES[package]],
    ]
    for step in steps:
        run = subprocess.run(step, capture_output=True, text=True, timeout=600)
        if run.returncode != 0:
            last = (run.stderr.strip().splitlines() or ["failed"])[-1]
            return f"could not fetch the samples of {package} {version} from {REPOSITORY} ({last})"
    return _copy(clone / SAMPLES[package], work / "samples" / folder_name(package, version))


def environment(
    bundle: str, connection_string: str, key_name: str, key: str, container: str
) -> dict[str, str]:
    """The variables the JavaScript samples read (their ``sample.env``), and Node's trust and modules;
    ``container``: the Blob Storage container of the checkpoint samples that are told one."""
    storage = f"https://{ACCOUNT}.blob.core.windows.net"
    return {
        "NODE_PATH": str(MODULES),
        "NODE_EXTRA_CA_CERTS": bundle,
        "SERVICEBUS_FQDN": "localhost",
        "SERVICEBUS_HOSTNAME": "localhost",
        "SERVICEBUS_CONNECTION_STRING": connection_string,
        "SERVICEBUS_SAS_POLICY": key_name,
        "SERVICEBUS_SAS_KEY": key,
        "EVENTHUB_FQDN": "localhost",
        "EVENTHUB_CONNECTION_STRING": connection_string,
        "EVENTHUB_CONSUMER_GROUP_NAME": "$Default",
        "CONSUMER_GROUP_NAME": "$Default",
        "EVENT_HUB_CONNECTION_STRING": connection_string,
        "EVENT_HUB_CONSUMER_GROUP": "$Default",
        "STORAGE_ENDPOINT": storage,
        "STORAGE_CONTAINER_URL": f"{storage}/{container}",
        "STORAGE_ACCOUNT_NAME": ACCOUNT,
        "STORAGE_ACCOUNT_KEY": ACCOUNT_KEY,  # Azurite's published development key, not a secret
    }


def entity_names(names: dict[str, str]) -> dict[str, str]:
    """The JavaScript samples' names for one sample's entities (``sdk_samples.entity_names``)."""
    return {
        "QUEUE_NAME": names["SERVICEBUS_QUEUE_NAME"],
        "QUEUE_NAME_WITH_SESSIONS": names["SERVICEBUS_SESSION_QUEUE_NAME"],
        "TOPIC_NAME": names["SERVICEBUS_TOPIC_NAME"],
        "SUBSCRIPTION_NAME": names["SERVICEBUS_SUBSCRIPTION_NAME"],
        "EVENTHUB_NAME": names["EVENT_HUB_NAME"],
    }


def sample_entities(sample: str, names: dict[str, str]) -> dict[str, str]:
    """What differs for one sample from ``entity_names``: a queue it creates itself."""
    return {"QUEUE_NAME": f"{names['QUEUE_NAME']}-new"} if sample in CREATE_THEIR_QUEUE else {}
