"""Every Spark pod Federator causes to exist passes Pod Security "restricted" (each control of the
standard checked on its own, named when it fails), runs as the image's non-root uid/gid on a read-only
root filesystem, and has a writable emptyDir wherever Spark and Python write."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from federator.planning.application import plan_application, plan_member_task
from federator.planning.follower import plan_task
from federator.planning.following import followed_groups, resolve_following
from federator.planning.launchers import LAUNCHERS, render_spark_application
from federator.planning.launchers.pods import LOCAL_DIR, TMP_DIR
from federator.planning.task import CHECKPOINT_MOUNT, plan_replication_task
from federator.settings import OperatorSettings
from federator_contract.api.replicationapplication import ReplicationApplicationSpec
from federator_contract.api.replicationtask import ReplicationTaskSpec
from federator_contract.taskconfig import TaskConfig
from support.pod_security import RULES, Rule, violations
from support.spark_crds import crd_errors, pod_template_errors
from support.spark_pods import main_container, pod_templates

ROOT = Path(__file__).resolve().parents[2]
Obj = dict[str, Any]


def _examples(kind: str) -> list[tuple[str, str, Obj]]:
    """(name, namespace, spec) of every object of ``kind`` in examples/."""
    found = []
    for path in sorted((ROOT / "examples").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if doc and doc.get("kind") == kind:
                found.append(
                    (doc["metadata"]["name"], doc["metadata"].get("namespace", "default"), doc["spec"])
                )
    return found


def _with_runtime(spec: Obj, **runtime: Any) -> Obj:
    return {**spec, "runtime": {**spec.get("runtime", {}), **runtime}}


_ALL_TASKS = _examples("ReplicationTask")
# A member of a shared application has no Spark application of its own: its application renders the pods.
EXAMPLES = [task for task in _ALL_TASKS if "applicationRef" not in task[2].get("runtime", {})]
MEMBERS = [task for task in _ALL_TASKS if task not in EXAMPLES]
_CLUSTER = next(spec for name, _, spec in EXAMPLES if name == "orders-geo-replication")
# Beyond the examples: a task's own claim, a file URI (no claim), its own service account.
TASKS = [
    *EXAMPLES,
    (
        "own-claim",
        "team-a",
        _with_runtime(_CLUSTER, checkpoint={"persistentVolumeClaim": {"claimName": "rwx"}}),
    ),
    ("file-uri", "team-a", _with_runtime(_CLUSTER, checkpoint={"uri": "file:///mnt/shared/cp"})),
    ("own-account", "team-a", _with_runtime(_CLUSTER, serviceAccountName="orders-replicator")),
]


def _apps(settings: OperatorSettings | None = None) -> list[tuple[str, str, Obj]]:
    """(id, launcher, rendered application) for every task and launcher."""
    apps = []
    for name, namespace, raw in TASKS:
        spec = ReplicationTaskSpec.model_validate(raw)
        # local=True: the examples that use the built-in emulator render their pods the same way.
        plan = plan_replication_task(
            name=name, namespace=namespace, spec=spec, settings=settings or OperatorSettings(), local=True
        )
        for launcher in sorted(LAUNCHERS):
            app = render_spark_application(launcher, plan.spark_app)  # type: ignore[arg-type]
            apps.append((f"{name}-{launcher}", launcher, app))
    return apps


def _member_configs(application: str, namespace: str, settings: OperatorSettings) -> list[TaskConfig]:
    """The task configs of the examples' tasks that name ReplicationApplication `namespace/application`."""
    return [
        plan_member_task(
            name=task,
            namespace=ns,
            spec=ReplicationTaskSpec.model_validate(spec),
            settings=settings,
            local=True,
        ).task_config
        for task, ns, spec in MEMBERS
        if ns == namespace and spec["runtime"]["applicationRef"]["name"] == application
    ]


def _shared_id(namespace: str, name: str) -> str:
    return f"shared-{namespace}-{name}-"


def _shared_apps(settings: OperatorSettings) -> list[tuple[str, str, Obj]]:
    """(id, launcher, rendered application) for every ReplicationApplication of the examples, with the
    examples' tasks that name it as members, for each launcher."""
    apps = []
    for name, namespace, raw in _examples("ReplicationApplication"):
        configs = _member_configs(name, namespace, settings)
        assert configs, f"ReplicationApplication {name} of the examples has no member"
        for launcher in sorted(LAUNCHERS):
            spec = ReplicationApplicationSpec.model_validate({**raw, "launcher": launcher})
            plan = plan_application(
                name=name, namespace=namespace, spec=spec, members=configs, settings=settings
            )
            app = render_spark_application(plan.launcher, plan.spark_app)
            apps.append((_shared_id(namespace, name) + launcher, launcher, app))
    return apps


def _hosted_apps(settings: OperatorSettings) -> list[tuple[str, str, Obj]]:
    """(id, launcher, rendered application) for every task of the cluster examples that follows a
    FailoverGroup: in a cluster it runs in a host of its own (planning/follower.py)."""
    groups = {(ns, name): {"spec": spec, "status": {}} for name, ns, spec in _examples("FailoverGroup")}
    apps = []
    for name, namespace, raw in EXAMPLES:
        spec = ReplicationTaskSpec.model_validate(raw)
        followed = {g: groups.get((namespace, g)) for g in followed_groups(spec)}
        if not followed or any(g is None or _emulated(g) for g in followed.values()):
            continue  # follows nothing, or only in local mode
        for group in followed.values():
            primary = group["spec"]["primaryMember"]  # type: ignore[index]
            group["status"] = {"producerMember": primary, "consumerMember": primary}  # type: ignore[index]
        following = resolve_following(spec, followed)
        plan = plan_task(
            name=name, namespace=namespace, spec=following.spec, settings=settings, following=following
        )
        for launcher in sorted(LAUNCHERS):
            app = render_spark_application(launcher, plan.spark_app)  # type: ignore[arg-type]
            apps.append((f"hosted-{name}-{launcher}", launcher, app))
    assert apps, "the examples have a task that follows a FailoverGroup in a cluster"
    return apps


def _emulated(group: Obj) -> bool:
    return any("emulator" in m["connection"] for m in group["spec"]["members"])


APPS = _apps() + _shared_apps(OperatorSettings()) + _hosted_apps(OperatorSettings())
PODS = [
    (f"{id_}-{role}", t) for id_, launcher, app in APPS for role, t in pod_templates(launcher, app).items()
]


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.name)
def test_every_spark_pod_passes_each_restricted_control(rule: Rule) -> None:
    broken = {pod_id: problems for pod_id, template in PODS if (problems := rule.check(template))}
    assert broken == {}, f"Pod Security {rule.name} is broken by: {broken}"


@pytest.mark.parametrize(("app_id", "launcher", "app"), APPS, ids=[a[0] for a in APPS])
def test_the_hardened_applications_still_validate_against_the_operators_crds(
    app_id: str, launcher: str, app: Obj
) -> None:
    assert crd_errors(launcher, app) == []
    for template in pod_templates(launcher, app).values():
        assert pod_template_errors(template) == []


def test_pods_run_as_the_images_uid_and_gid_on_a_read_only_root() -> None:
    for pod_id, template in PODS:
        context = template["spec"]["securityContext"]
        assert (context["runAsUser"], context["runAsGroup"], context["fsGroup"]) == (185, 185, 185), pod_id
        assert main_container(template)["securityContext"]["readOnlyRootFilesystem"] is True, pod_id


def test_the_image_ids_come_from_the_operator_settings() -> None:
    settings = OperatorSettings(spark_run_as_user=1000, spark_run_as_group=3000)
    for app_id, launcher, app in _apps(settings)[:2]:
        for template in pod_templates(launcher, app).values():
            context = template["spec"]["securityContext"]
            assert (context["runAsUser"], context["runAsGroup"], context["fsGroup"]) == (1000, 3000, 3000), (
                app_id
            )


@pytest.mark.parametrize("name", ["spark_run_as_user", "spark_run_as_group"])
def test_root_ids_stop_the_operator_at_start(name: str) -> None:
    with pytest.raises(ValueError, match=f"FEDERATOR_{name.upper()}"):
        OperatorSettings.from_env({f"FEDERATOR_{name.upper()}": "0"})


def _writable_mount(template: Obj, path: str) -> tuple[Obj, Obj]:
    """The mount holding ``path`` and its volume; fails when nothing writable holds it."""
    mounts = [
        m for m in main_container(template)["volumeMounts"] if (path + "/").startswith(m["mountPath"] + "/")
    ]
    assert mounts, f"nothing is mounted at {path}: the read-only root filesystem refuses writes there"
    mount = max(mounts, key=lambda m: len(m["mountPath"]))
    assert not mount.get("readOnly"), f"{path} is mounted read-only"
    volume = next(v for v in template["spec"]["volumes"] if v["name"] == mount["name"])
    return mount, volume


def test_spark_and_python_write_only_on_volumes() -> None:
    for pod_id, template in PODS:
        # The JVM, Python's tempfile and the image entrypoint write /tmp.
        assert "emptyDir" in _writable_mount(template, TMP_DIR)[1], pod_id
        # Relative paths too (an executor's SparkFiles root, a JVM crash log).
        assert "emptyDir" in _writable_mount(template, main_container(template)["workingDir"])[1], pod_id
        # Spark's local dirs: its volumes are the mounts named spark-local-dir-* (SPARK_LOCAL_DIRS).
        mount, volume = _writable_mount(template, LOCAL_DIR)
        assert mount["name"].startswith("spark-local-dir-") and "emptyDir" in volume, pod_id


def test_the_checkpoint_claim_is_writable_in_every_pod() -> None:
    for pod_id, template in PODS:
        if pod_id.startswith("shared-"):  # each member's directory: below
            continue
        if pod_id.startswith("file-uri-"):
            assert not [v for v in template["spec"]["volumes"] if "persistentVolumeClaim" in v]
            continue
        assert "persistentVolumeClaim" in _writable_mount(template, CHECKPOINT_MOUNT)[1], pod_id


def test_a_shared_applications_pods_can_write_every_members_checkpoint() -> None:
    checked = 0
    for name, namespace, _ in _examples("ReplicationApplication"):
        pods = [(pod_id, t) for pod_id, t in PODS if pod_id.startswith(_shared_id(namespace, name))]
        for config in _member_configs(name, namespace, OperatorSettings()):
            if not config.checkpoint_location.startswith(f"file://{CHECKPOINT_MOUNT}/"):
                continue  # a local mode example's own directory: no claim
            path = config.checkpoint_location.removeprefix("file://")
            for pod_id, template in pods:
                assert "persistentVolumeClaim" in _writable_mount(template, path)[1], (pod_id, config.name)
                checked += 1
    assert checked, "the examples have a shared application in a cluster, with members on a claim"


def test_driver_and_executors_run_under_the_tasks_service_account() -> None:
    shared_accounts = {
        _shared_id(namespace, name): spec.get("serviceAccountName")
        for name, namespace, spec in _examples("ReplicationApplication")
    }
    for id_, launcher, app in APPS:
        expected = "orders-replicator" if id_.startswith("own-account-") else "federator-spark"
        for prefix, account in shared_accounts.items():
            if id_.startswith(prefix):
                expected = account or "federator-spark"
        for template in pod_templates(launcher, app).values():
            assert template["spec"]["serviceAccountName"] == expected, id_
        if launcher == "kubeflow":
            assert (
                app["spec"]["driver"]["serviceAccount"]
                == app["spec"]["executor"]["serviceAccount"]
                == expected
            )
        else:
            conf = app["spec"]["sparkConf"]
            assert conf["spark.kubernetes.authenticate.driver.serviceAccountName"] == expected
            assert conf["spark.kubernetes.authenticate.executor.serviceAccountName"] == expected


# ------------------------------------------------------------------------------ the checks can fail

_COMPLIANT = PODS[0][1]


def _container_context(**values: Any) -> Callable[[Obj], None]:
    def change(pod: Obj) -> None:
        pod["spec"]["containers"][0]["securityContext"].update(values)

    return change


def _pod_context(**values: Any) -> Callable[[Obj], None]:
    def change(pod: Obj) -> None:
        pod["spec"]["securityContext"].update(values)

    return change


def _spec(**values: Any) -> Callable[[Obj], None]:
    def change(pod: Obj) -> None:
        pod["spec"].update(values)

    return change


def _drop(field: str, pod_level: bool = False) -> Callable[[Obj], None]:
    def change(pod: Obj) -> None:
        (pod["spec"] if pod_level else pod["spec"]["containers"][0])["securityContext"].pop(field)

    return change


def _add_volume(pod: Obj) -> None:
    pod["spec"]["volumes"].append({"name": "shared", "nfs": {"server": "nfs.example", "path": "/export"}})


def _host_path(pod: Obj) -> None:
    pod["spec"]["volumes"].append({"name": "node", "hostPath": {"path": "/var/run"}})


def _host_port(pod: Obj) -> None:
    pod["spec"]["containers"][0]["ports"] = [{"containerPort": 9464, "hostPort": 9464}]


def _probe_host(pod: Obj) -> None:
    pod["spec"]["containers"][0]["livenessProbe"] = {"httpGet": {"host": "10.0.0.1", "port": 8080}}


def _apparmor_annotation(pod: Obj) -> None:
    pod["metadata"]["annotations"]["container.apparmor.security.beta.kubernetes.io/spark"] = "unconfined"


def _init_container_without_context(pod: Obj) -> None:
    pod["spec"]["initContainers"] = [{"name": "init", "image": "busybox"}]


# One way to break each control, applied to a compliant Spark pod: each rule must see its own.
BREAKS: dict[str, list[Callable[[Obj], None]]] = {
    "baseline / HostProcess": [_container_context(windowsOptions={"hostProcess": True})],
    "baseline / Host Namespaces": [_spec(hostNetwork=True), _spec(hostPID=True), _spec(hostIPC=True)],
    "baseline / Privileged Containers": [_container_context(privileged=True)],
    "baseline / Capabilities": [_container_context(capabilities={"drop": ["ALL"], "add": ["SYS_ADMIN"]})],
    "baseline / HostPath Volumes": [_host_path],
    "baseline / Host Ports": [_host_port],
    "baseline / Host Probes / Lifecycle Hooks": [_probe_host],
    "baseline / AppArmor": [_apparmor_annotation, _pod_context(appArmorProfile={"type": "Unconfined"})],
    "baseline / SELinux": [
        _pod_context(seLinuxOptions={"type": "spc_t"}),
        _pod_context(seLinuxOptions={"user": "u"}),
    ],
    "baseline / /proc Mount Type": [_container_context(procMount="Unmasked")],
    "baseline / Seccomp": [_container_context(seccompProfile={"type": "Unconfined"})],
    "baseline / Sysctls": [_pod_context(sysctls=[{"name": "kernel.msgmax", "value": "1"}])],
    "restricted / Volume Types": [_add_volume, _host_path],
    "restricted / Privilege Escalation": [
        _container_context(allowPrivilegeEscalation=True),
        _drop("allowPrivilegeEscalation"),
        _init_container_without_context,
    ],
    "restricted / Running as Non-root": [
        _pod_context(runAsNonRoot=False),
        _container_context(runAsNonRoot=False),
    ],
    "restricted / Running as Non-root user": [_pod_context(runAsUser=0), _container_context(runAsUser=0)],
    "restricted / Seccomp": [
        _drop("seccompProfile", pod_level=True),
        _pod_context(seccompProfile={"type": "Unconfined"}),
    ],
    "restricted / Capabilities": [
        _drop("capabilities"),
        _container_context(capabilities={"drop": ["ALL"], "add": ["CHOWN"]}),
        _init_container_without_context,
    ],
}


def test_every_control_has_a_way_to_break_it() -> None:
    assert set(BREAKS) == {rule.name for rule in RULES}


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.name)
def test_each_control_catches_what_breaks_it(rule: Rule) -> None:
    assert violations(_COMPLIANT) == []
    for index, breaking in enumerate(BREAKS[rule.name]):
        pod = copy.deepcopy(_COMPLIANT)
        breaking(pod)
        assert rule.check(pod), f"{rule.name} missed break #{index}: {pod['spec']}"


def test_a_pod_without_any_security_context_breaks_the_restricted_controls() -> None:
    bare = {"metadata": {}, "spec": {"containers": [{"name": "spark-kubernetes-driver"}]}}
    broken = {rule.name for rule in RULES if rule.check(bare)}
    assert broken == {
        "restricted / Privilege Escalation",
        "restricted / Running as Non-root",
        "restricted / Seccomp",
        "restricted / Capabilities",
    }


@pytest.mark.parametrize(("app_id", "launcher", "app"), APPS, ids=[a[0] for a in APPS])
def test_only_the_driver_says_why_it_failed_in_its_termination_message(
    app_id: str, launcher: str, app: Obj
) -> None:
    """A failed driver's last log lines (e.g. CheckpointSourceMismatch and its remedy) become its
    termination message, which the launchers' status carries to the operator."""
    templates = pod_templates(launcher, app)
    assert main_container(templates["driver"])["terminationMessagePolicy"] == "FallbackToLogsOnError"
    assert "terminationMessagePolicy" not in main_container(templates["executor"])
