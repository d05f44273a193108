"""Run the Azure SDKs' published samples against the emulator (``tools/run-sdk-samples``).

The Python samples come from the sdists of the installed azure-eventhub and azure-servicebus versions
(``pip download --no-binary :all: --no-deps``), the JavaScript ones from the SDK repository at the
pinned packages' tags (``sdk_samples_js``), unmodified. A sample is a command (its language's
interpreter and its file) and an environment: they run with only environment variables
set, as a user runs them against Azure: the connection strings, entity names, and for Microsoft Entra
ID ``AZURE_AUTHORITY_HOST``, ``AZURE_TENANT_ID``, ``AZURE_CLIENT_ID`` and ``AZURE_FEDERATED_TOKEN_FILE``
(``DefaultAzureCredential`` signs in as a workload identity, as in AKS) or ``AZURE_CLIENT_SECRET``
(the samples that build an ``EnvironmentCredential``).

The SDKs reach Azure on fixed ports (5671 for AMQP over TLS, 443 for WebSockets and HTTPS), so the
samples and the emulator run in a private network namespace (``unshare``) where loopback is theirs:
the emulator binds those ports on 127.0.0.1, ``localhost`` is the namespace's host name, and
``login.microsoftonline.com`` (which MSAL asks about unknown authorities) is mapped to loopback too.
The samples trust the emulator's CA through a copy of ``certifi`` (the SDKs' AMQP transport reads only
its bundle) and ``SSL_CERT_FILE`` / ``REQUESTS_CA_BUNDLE``.

The checkpoint samples keep their checkpoints in Blob Storage (``sdk_samples_storage``): Azurite
(``tools/install-azurite``, run first if it is missing) serves the account ``AZURE_STORAGE_ACCOUNT`` names,
at Azure's URL
``https://devstoreaccount1.blob.core.windows.net`` (on its own loopback address, so that it has port 443
too), over HTTPS with a certificate of its own CA, accepting the emulator's Microsoft Entra tokens. The
container the samples name is created first; the runner sends events into such a sample's event hub
before it starts, and the sample passes only if it wrote checkpoints in the store.

Samples that need something other than Event Hubs, Service Bus and Blob Storage are listed with the reason
and not run. A sample that is still running after its time (the receive samples run until interrupted) is
stopped with SIGINT, as a user stops it; it passes if it printed no error. The result is a table,
and the exit code is 1 if any sample failed.
"""

from __future__ import annotations

import argparse
import fnmatch
import importlib.metadata
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from contextlib import ExitStack, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sdk_samples_js
from sdk_samples_storage import (
    BLOB_ADDRESS,
    BLOB_CONTAINER,
    BLOB_HOST,
    NEEDS_BLOB_STORAGE,
    BlobStorage,
    install_azurite,
    live_events,
    needs_blob_storage,
    seed_events,
    start_blob_storage,
    stop_blob_storage,
)

from federator.local.azurite import ACCOUNT, AzuriteNotFound

ROOT = Path(__file__).resolve().parents[1]
DISTRIBUTIONS = ("azure-eventhub", "azure-servicebus")
INSIDE = "FEDERATOR_SAMPLES_INSIDE_NETNS"
TENANT = "00000000-0000-0000-0000-0000000e0000"
CLIENT_ID = "5a3b1e2c-0d4f-4e6a-9b8c-7d6e5f4a3b2c"
CLIENT_SECRET = "samples-client-secret"  # a placeholder for a throwaway emulator, not a secret
SERVICE_ACCOUNT = "system:serviceaccount:samples:runner"
CLUSTER_ISSUER = "https://oidc.samples.invalid"
KEY_NAME = "RootManageSharedAccessKey"  # its value is the emulator's own: the ready file has it
NAMESPACE = "samples"
PARTITIONS = 2  # of every event hub

# Samples that need something other than Event Hubs, Service Bus and Blob Storage (checked on the source).
NOT_RUN: tuple[tuple[str, str], ...] = (
    ("IOTHUB_CONN_STR", "needs an Azure IoT Hub"),
    ("<custom_endpoint_hostname>", "its custom endpoint address is a placeholder to edit in the code"),
    ("http_proxy=HTTP_PROXY", "needs an HTTP proxy at the address and credentials written in the sample"),
)
# Samples that fail by themselves, whatever service they run against: run, and reported with the reason
# when they fail the known way.
_COUNT_IN_EMPTY_DICT = (
    "The exception is KeyError(",
    "the sample's own bug: its event handler counts events per partition in an empty dict (KeyError), "
    "so it never checkpoints",
)
SAMPLE_DEFECTS = {
    "recv_with_checkpoint_by_event_count.py": _COUNT_IN_EMPTY_DICT,
    "recv_with_checkpoint_by_event_count_async.py": _COUNT_IN_EMPTY_DICT,
    "sample_code_eventhub.py": (
        "UnboundLocalError: cannot access local variable 'EventHubProducerClient'",
        "the sample's own bug: it imports EventHubProducerClient inside a function after using it there",
    ),
}
# Samples that need more time than most before they end, or before they can be stopped:
# - a pool of next-available-session receivers drains the queue, then each waits, and retries with
#   backoff, until no session comes (OperationTimeoutError), and ends;
# - the async sample code sends batches of 1 MB (tens of thousands of events) and receives them all from
#   the start, in a callback loop that gives the event loop no turn (so no SIGINT) until it has drained
#   them (about two minutes on a loaded 2-core machine).
SAMPLE_SECONDS = {
    "session_pool_receive.py": 90.0,
    "session_pool_receive_async.py": 90.0,
    "sample_code_eventhub_async.py": 150.0,
}
# How long a sample gets to stop after SIGINT (an async client's cleanup on a loaded machine takes a while).
_STOP_SECONDS = 30
FAILURE_MARKS = (
    "Traceback (most recent call last)",
    "An exception:",
    "Error occurred",
    "An error occurred while",  # the Event Hubs EventProcessor logs an error (or its handler's) and goes on
)


@dataclass(frozen=True)
class Language:
    """How a sample in one language runs, what it needs that is not here, how its output tells of a
    failure: a sample is a command and its environment."""

    suffix: str
    interpreter: tuple[str, ...]
    not_run: tuple[tuple[str, str], ...]
    failure_marks: tuple[str, ...]
    # Where its output says what went wrong: the last lines (a Python traceback ends with the error),
    # or the line with the failure mark (a JS sample prints the error there, then the error's fields).
    error_at_mark: bool = False


PYTHON = Language(".py", (sys.executable,), NOT_RUN, FAILURE_MARKS)
JAVASCRIPT = Language(".js", ("node",), sdk_samples_js.NOT_RUN, sdk_samples_js.FAILURE_MARKS, True)
LANGUAGES = {language.suffix: language for language in (PYTHON, JAVASCRIPT)}
# Why the JavaScript samples are missing, if they are (written outside the namespace, read inside).
JS_MISSING = "javascript-samples-missing.txt"


@dataclass
class Result:
    sample: str
    status: str  # pass, stopped (ran until interrupted, no error), fail, defect (the sample's own), not run
    seconds: float
    detail: str


# -- outside the network namespace ---------------------------------------------------------------
def fetch_samples(work: Path) -> list[Path]:
    """The samples directories of the installed SDK versions' sdists (downloaded once into ``work``)."""
    found = []
    for distribution in DISTRIBUTIONS:
        version = importlib.metadata.version(distribution)
        target = work / "samples" / f"{distribution}-{version}"
        if not target.exists():
            sdists = work / "sdists"
            requirement = f"{distribution}=={version}"
            pip = [sys.executable, "-m", "pip", "download", "--quiet", "--no-binary", ":all:", "--no-deps"]
            subprocess.run([*pip, "--dest", str(sdists), requirement], check=True)
            archive = next(sdists.glob(f"{distribution.replace('-', '_')}-{version}.tar.gz"))
            with tarfile.open(archive) as tar:
                members = [m for m in tar.getmembers() if "/samples/" in m.name and m.isfile()]
                tar.extractall(work / "extract", members=members, filter="data")
            extracted = next((work / "extract").glob(f"*{version}/samples"))
            shutil.move(str(extracted), target)
        found.append(target)
    return found


def fetch_js_samples(work: Path, checkout: Path | None) -> None:
    """The JavaScript samples (``sdk_samples_js``), after their packages are installed (with npm, which
    the namespace has no network for); the reason there are none, if so, for ``inside``."""
    if shutil.which("node") is not None:
        subprocess.run([str(ROOT / "tools" / "install-js-sdks")], check=False, stdout=subprocess.DEVNULL)
    missing = "node is not installed" if shutil.which("node") is None else ""
    missing = missing or sdk_samples_js.fetch(work, checkout).missing
    (work / JS_MISSING).write_text(missing)


def reexec_in_network_namespace(args: list[str]) -> int:
    if shutil.which("unshare") is None:
        print("run-sdk-samples needs unshare (util-linux) for a private network namespace", file=sys.stderr)
        return 2
    command = ["unshare", "--user", "--map-root-user", "--net", "--mount", sys.executable, __file__, *args]
    return subprocess.run(command, env={**os.environ, INSIDE: "1"}).returncode


# -- inside ---------------------------------------------------------------------------------------
def prepare_network(work: Path) -> None:
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    hosts = work / "hosts"
    names = f"127.0.0.1 localhost login.microsoftonline.com\n{BLOB_ADDRESS} {BLOB_HOST}\n::1 localhost\n"
    hosts.write_text(names)
    subprocess.run(["mount", "--bind", str(hosts), "/etc/hosts"], check=True)


def cluster_issuer(work: Path) -> tuple[Path, Path]:
    """A stand-in for a cluster's service account issuer: its JWKS, and a projected token it signed."""
    import jwt
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk: dict[str, Any] = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    jwks = work / "cluster-jwks.json"
    jwks.write_text(json.dumps({"keys": [{**jwk, "kid": "samples", "use": "sig"}]}))
    now = int(time.time())
    claims = {"iss": CLUSTER_ISSUER, "sub": SERVICE_ACCOUNT, "aud": ["api://AzureADTokenExchange"]}
    token = jwt.encode({**claims, "iat": now, "exp": now + 6 * 3600}, key, "RS256", {"kid": "samples"})
    token_file = work / "azure-identity-token"
    token_file.write_text(token)
    return jwks, token_file


def entity_names(index: int) -> dict[str, str]:
    """The entities one sample uses: each sample has its own, so none finds another's leftovers (an Event
    Hubs receive sample reads its hub from the start)."""
    names = {
        "EVENT_HUB_NAME": f"eventhub-{index}",
        "SERVICEBUS_QUEUE_NAME": f"queue-{index}",
        "SERVICEBUS_SESSION_QUEUE_NAME": f"sessionqueue-{index}",
        "SERVICEBUS_TOPIC_NAME": f"topic-{index}",
        "SERVICEBUS_SUBSCRIPTION_NAME": "subscription",
    }
    return {**names, **sdk_samples_js.entity_names(names)}


def emulator_config(jwks: Path, samples: int) -> dict[str, Any]:
    names = [entity_names(i) for i in range(samples)]
    owner_roles = ["Azure Event Hubs Data Owner", "Azure Service Bus Data Owner", "Contributor"]
    return {
        "tlsHostNames": ["login.microsoftonline.com"],
        "identity": {
            "tenantId": TENANT,
            "trustedIssuers": [{"issuer": CLUSTER_ISSUER, "jwksPath": str(jwks)}],
            "applications": [
                {
                    "name": "samples",
                    "clientId": CLIENT_ID,
                    "clientSecret": CLIENT_SECRET,
                    "federatedCredentials": [{"issuer": CLUSTER_ISSUER, "subject": SERVICE_ACCOUNT}],
                }
            ],
        },
        "namespaces": [
            {
                "name": NAMESPACE,
                "host": "127.0.0.1",
                "amqpPort": 5672,
                "httpsPort": 443,
                "amqpsPort": 5671,
                "roleAssignments": [{"principal": "samples", "role": role} for role in owner_roles],
                "eventHubs": [{"name": n["EVENT_HUB_NAME"], "partitionCount": PARTITIONS} for n in names],
                "queues": [{"name": n["SERVICEBUS_QUEUE_NAME"]} for n in names]
                + [{"name": n["SERVICEBUS_SESSION_QUEUE_NAME"], "requiresSession": True} for n in names],
                "topics": [
                    {
                        "name": n["SERVICEBUS_TOPIC_NAME"],
                        "subscriptions": [{"name": n["SERVICEBUS_SUBSCRIPTION_NAME"]}],
                    }
                    for n in names
                ],
            }
        ],
    }


def start_emulator(work: Path, config: dict[str, Any]) -> tuple[subprocess.Popen[bytes], dict[str, Any]]:
    import yaml

    config_file, ready = work / "emulator.yaml", work / "ready.json"
    config_file.write_text(yaml.safe_dump(config))
    ready.unlink(missing_ok=True)
    log = (work / "emulator.log").open("wb")
    command = [sys.executable, "-m", "federator_emulator", "--config", str(config_file)]
    process = subprocess.Popen(
        [*command, "--ready-file", str(ready), "--data-dir", str(work / "data"), "--log-level", "WARNING"],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 60
    while not ready.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the emulator did not start; see {work / 'emulator.log'}")
        time.sleep(0.1)
    return process, json.loads(ready.read_text())


def trust_store(work: Path, cas: list[Path]) -> Path:
    """A copy of certifi whose bundle also holds the emulator's (and Azurite's) CA (the SDKs' AMQP
    transport reads only ``certifi.where()``), to put first on PYTHONPATH."""
    import certifi

    trust = work / "trust"
    shutil.rmtree(trust, ignore_errors=True)
    shutil.copytree(Path(certifi.__file__).parent, trust / "certifi")
    bundle = trust / "certifi" / "cacert.pem"
    bundle.write_text("\n".join([bundle.read_text(), *(ca.read_text() for ca in cas)]))
    return trust


def sample_environment(trust: Path, token_file: Path, key: str) -> dict[str, str]:
    """What every sample gets (``entity_names`` adds its own entities); ``key``: the namespace's key."""
    bundle = str(trust / "certifi" / "cacert.pem")
    connection_string = f"Endpoint=sb://localhost/;SharedAccessKeyName={KEY_NAME};SharedAccessKey={key}"
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR", "VIRTUAL_ENV")}
    return {
        **keep,
        "PYTHONPATH": str(trust),
        "SSL_CERT_FILE": bundle,
        "REQUESTS_CA_BUNDLE": bundle,
        "WEBSOCKET_CLIENT_CA_BUNDLE": bundle,
        "EVENT_HUB_HOSTNAME": "localhost",
        "EVENT_HUB_CONN_STR": connection_string,
        "EVENT_HUB_SAS_POLICY": KEY_NAME,
        "EVENT_HUB_SAS_KEY": key,
        "SERVICEBUS_FULLY_QUALIFIED_NAMESPACE": "localhost",
        "SERVICEBUS_CONNECTION_STR": connection_string,
        "SERVICEBUS_SESSION_ID": "session",
        "SERVICEBUS_SAS_POLICY": KEY_NAME,
        "SERVICEBUS_SAS_KEY": key,
        "AZURE_AUTHORITY_HOST": "https://localhost",  # the emulator's port 443, Azure's HTTPS port
        "AZURE_TENANT_ID": TENANT,
        "AZURE_CLIENT_ID": CLIENT_ID,
        "AZURE_FEDERATED_TOKEN_FILE": str(token_file),
        "AZURE_STORAGE_ACCOUNT": ACCOUNT,
        **sdk_samples_js.environment(bundle, connection_string, KEY_NAME, key, BLOB_CONTAINER),
    }


@dataclass
class Runner:
    """What the samples run with; ``not_run``: marks (found in a sample's source) with the reason, beyond
    each language's own."""

    base: Path
    environment: dict[str, str]
    seconds: float
    logs: Path
    storage: BlobStorage | None
    plain_connection: str  # the emulator's plain AMQP port, for the runner's own sends
    not_run: tuple[tuple[str, str], ...] = ()

    def run(self, path: Path, index: int) -> Result:
        name, source = str(path.relative_to(self.base)), path.read_text()
        language = LANGUAGES[path.suffix]
        marks = language.not_run + self.not_run
        reason = next((reason for mark, reason in marks if mark in source), None)
        if reason is not None:
            return Result(name, "not run", 0.0, reason)
        names = entity_names(index)
        environment = {**self.environment, **names, **sdk_samples_js.sample_entities(path.name, names)}
        before = self.run_first(path, language, environment)
        if before is not None and before.status not in ("pass", "stopped"):
            detail = f"{before.sample}, to run before it, failed: {before.detail}"
            return Result(name, "fail", before.seconds, detail)
        event_hub = names["EVENT_HUB_NAME"]
        storage = self.storage if NEEDS_BLOB_STORAGE in source else None
        if storage is not None:
            seed_events(self.plain_connection, event_hub, PARTITIONS)
        live = nullcontext() if storage is None else live_events(self.plain_connection, event_hub, PARTITIONS)
        with live:
            result = run_sample(path, name, language, environment, self.seconds, self.logs)
        # The SDK only logs a checkpoint store's errors (and errors in the sample's event handler) and
        # carries on: the checkpoints in the store are what show that the sample worked.
        passed = result.status in ("pass", "stopped")
        if storage is not None and passed and not storage.checkpoints(event_hub):
            text = log_file(self.logs, name).read_text()
            return failure(name, text, result.seconds, "wrote no checkpoint in the checkpoint store")
        return result

    def run_first(self, path: Path, language: Language, environment: dict[str, str]) -> Result | None:
        """The sample a sample says to run before it (with the same entities), if it names one."""
        first = sdk_samples_js.RUN_FIRST.get(path.name)
        if first is None:
            return None
        package = self.base / path.relative_to(self.base).parts[0]
        found = next(package.rglob(first))
        name = f"{found.relative_to(self.base)} (before {path.name})"
        return run_sample(found, name, language, environment, self.seconds, self.logs)


def log_file(logs: Path, name: str) -> Path:
    return logs / name.replace("/", "__")


def failure(name: str, text: str, seconds: float, detail: str) -> Result:
    """A failed sample's result: a defect if it failed by its own known bug."""
    defect = SAMPLE_DEFECTS.get(Path(name).name)
    if defect is not None and defect[0] in text:
        return Result(name, "defect", seconds, defect[1])
    return Result(name, "fail", seconds, detail)


def run_sample(
    path: Path, name: str, language: Language, environment: dict[str, str], seconds: float, logs: Path
) -> Result:
    source = path.read_text()
    env = {**environment, "PYTHONFAULTHANDLER": "1"}
    # The Event Hubs samples read the hub from the connection string too (EntityPath), as the portal gives it.
    env["EVENT_HUB_CONN_STR"] += f";EntityPath={env['EVENT_HUB_NAME']}"
    if "EnvironmentCredential(" in source:  # a service principal with a secret, as these samples expect
        env["AZURE_CLIENT_SECRET"] = CLIENT_SECRET
    started = time.monotonic()
    process = subprocess.Popen(
        [*language.interpreter, path.name],
        cwd=path.parent,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    stopped, hung = False, False
    try:
        output, _ = process.communicate(timeout=SAMPLE_SECONDS.get(path.name, seconds))
    except subprocess.TimeoutExpired:
        stopped = True
        process.send_signal(signal.SIGINT)  # as a user stops a sample that receives until interrupted
        try:
            output, _ = process.communicate(timeout=_STOP_SECONDS)
        except subprocess.TimeoutExpired:
            hung = True
            process.send_signal(signal.SIGABRT)  # PYTHONFAULTHANDLER: the log shows where every thread was
            output, _ = process.communicate()
    text = output.decode(errors="replace")
    log = log_file(logs, name)
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(text)
    elapsed = time.monotonic() - started
    if hung:
        return Result(name, "fail", elapsed, f"did not stop on SIGINT; see {log}")
    marks = language.failure_marks
    mark = next((m for m in marks if m in text and not _interrupt_only(text, stopped)), None)
    if mark is not None or (process.returncode != 0 and not stopped):
        marked = mark is not None and language.error_at_mark
        return failure(name, text, elapsed, _line_with(text, mark) if marked else _last_lines(text))
    return Result(name, "stopped" if stopped else "pass", elapsed, "")


_TRACEBACK = "Traceback (most recent call last):"
_INTERRUPTION = ("KeyboardInterrupt", "asyncio.exceptions.CancelledError", "CancelledError")


def _interrupt_only(text: str, stopped: bool) -> bool:
    """Tracebacks that only report our SIGINT (and the cancellations it causes in an event loop) are how
    a sample without a handler for it stops."""
    if not stopped:
        return False
    raised = []
    for block in text.split(_TRACEBACK)[1:]:  # a traceback ends at its first unindented line
        line = next((line for line in block.splitlines() if line and not line[0].isspace()), "")
        raised.append(re.split(r"[:(]", line, maxsplit=1)[0].strip())
    return bool(raised) and all(name in _INTERRUPTION for name in raised)


def _line_with(text: str, mark: str | None) -> str:
    return next((line.strip() for line in text.splitlines() if mark and mark in line), "")[:400]


def _last_lines(text: str, count: int = 4) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return " | ".join(lines[-count:])[:400]


def print_table(results: list[Result]) -> None:
    width = max(len(r.sample) for r in results)
    print(f"{'sample':<{width}}  {'result':<8} {'seconds':>7}  detail")
    for r in results:
        print(f"{r.sample:<{width}}  {r.status:<8} {r.seconds:7.1f}  {r.detail}")
    statuses = ("pass", "stopped", "fail", "defect", "not run")
    counts = {status: sum(r.status == status for r in results) for status in statuses}
    passed, failed = counts["pass"] + counts["stopped"], counts["fail"]
    print(f"{passed} passed, {failed} failed, {counts['defect']} sample defects, {counts['not run']} not run")


def wants(only: str, language: Language) -> bool:
    """Whether the ``--only`` pattern may select samples in ``language`` (it may name another's suffix)."""
    others = tuple(suffix for suffix in LANGUAGES if suffix != language.suffix)
    return not only.endswith(others)


def selected(work: Path, only: str) -> list[Path]:
    """The samples (in any language) whose file names match ``only``; none where none were fetched (a
    fresh clone whose JavaScript samples could not be cloned, the Python ones not fetched yet)."""
    folders = sorted((work / "samples").iterdir()) if (work / "samples").is_dir() else []
    return [
        path
        for samples in folders
        for path in sorted(samples.rglob("*"))
        if path.suffix in LANGUAGES and fnmatch.fnmatch(path.name, only) and "node_modules" not in path.parts
    ]


def stop_emulator(emulator: subprocess.Popen[bytes]) -> None:
    emulator.send_signal(signal.SIGTERM)
    emulator.wait(30)


def runner(work: Path, paths: list[Path], seconds: float, stack: ExitStack) -> Runner:
    """Start the emulator, and Azurite if a sample needs Blob Storage; ``stack`` stops them."""
    jwks, token_file = cluster_issuer(work)
    shutil.rmtree(work / "data", ignore_errors=True)
    emulator, ready = start_emulator(work, emulator_config(jwks, len(paths)))
    stack.callback(stop_emulator, emulator)
    cas, storage = [Path(ready["caCertificatePath"])], None
    not_run: tuple[tuple[str, str], ...] = ()
    if needs_blob_storage(paths):
        try:
            storage = start_blob_storage(work)
        except AzuriteNotFound as missing:
            not_run = ((NEEDS_BLOB_STORAGE, f"needs Azure Blob Storage: {missing}"),)
        else:
            stack.callback(stop_blob_storage, storage)
            cas.append(storage.ca)
    plain = ready["namespaces"][NAMESPACE]["connectionString"]
    key = re.search(r"SharedAccessKey=([^;]+)", plain)
    assert key is not None, f"the emulator's ready file has no key in {NAMESPACE}'s connection string"
    environment = sample_environment(trust_store(work, cas), token_file, key[1])
    return Runner(work / "samples", environment, seconds, work / "logs", storage, plain, not_run)


def inside(work: Path, only: str, seconds: float, report: Path | None) -> int:
    prepare_network(work)
    paths = selected(work, only)
    results = []
    with ExitStack() as stack:
        samples = runner(work, paths, seconds, stack)
        for index, path in enumerate(paths):
            result = samples.run(path, index)
            print(f"{result.status:<8} {result.seconds:6.1f}s  {result.sample}", flush=True)
            results.append(result)
    js_missing = (work / JS_MISSING).read_text() if (work / JS_MISSING).exists() else ""
    if js_missing:
        results.append(Result("javascript samples", "not run", 0.0, js_missing))
    print()
    print_table(results)
    if report is not None:
        report.write_text(json.dumps([r.__dict__ for r in results], indent=2) + "\n")
    return 1 if any(r.status == "fail" for r in results) else 0


def main() -> int:
    # Started in the background of a shell, SIGINT is ignored and the samples, which it stops, would inherit
    # that; a handler (not SIG_IGN) is reset to the default in each child.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    parser = argparse.ArgumentParser(prog="run-sdk-samples", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--work", type=Path, default=ROOT / ".cache" / "sdk-samples", help="download and run here"
    )
    parser.add_argument("--only", default="*", help="a file name pattern of the samples to run (*.js: JS's)")
    checkout = "a checkout of Azure/azure-sdk-for-js at the pinned versions' tags"
    parser.add_argument("--js-samples", type=Path, default=None, help=checkout)
    parser.add_argument("--seconds", type=float, default=25.0, help="a sample's time before SIGINT stops it")
    parser.add_argument("--report", type=Path, default=None, help="also write the results as JSON here")
    args = parser.parse_args()
    work: Path = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    if os.environ.get(INSIDE) == "1":
        report = args.report.resolve() if args.report else None
        return inside(work, args.only, args.seconds, report)
    if wants(args.only, PYTHON):
        fetch_samples(work)
    (work / JS_MISSING).unlink(missing_ok=True)
    if wants(args.only, JAVASCRIPT):
        fetch_js_samples(work, args.js_samples.resolve() if args.js_samples else None)
    if needs_blob_storage(selected(work, args.only)):
        install_azurite()
    forwarded = ["--work", str(work), "--only", args.only, "--seconds", str(args.seconds)]
    if args.report is not None:
        forwarded += ["--report", str(args.report.resolve())]
    return reexec_in_network_namespace(forwarded)


if __name__ == "__main__":
    sys.exit(main())
