"""The Kubernetes Pod Security Standards, "baseline" and "restricted" profiles, as checks on a pod
template (`{"metadata": ..., "spec": PodSpec}`), written from the standard's documentation
(https://kubernetes.io/docs/concepts/security/pod-security-standards/, Kubernetes 1.35): one `Rule` per
control of its tables, named as the documentation names it, each returning what violates it.

A namespace labelled `pod-security.kubernetes.io/enforce: restricted` refuses a pod that breaks any of
them. The fake API server of the tests does not enforce Pod Security; these checks stand in for it.
Pods in a user namespace (`hostUsers: false`) get no relaxation here: Federator's pods do not use one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

Obj = dict[str, Any]

BASELINE, RESTRICTED = "baseline", "restricted"

# Capabilities: "Adding capabilities beyond those listed below must be disallowed."
BASELINE_CAPABILITIES = frozenset(
    {
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    }
)
SAFE_SYSCTLS = frozenset(
    {
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.ip_unprivileged_port_start",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_fin_timeout",
        "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
        "net.ipv4.tcp_rmem",
        "net.ipv4.tcp_wmem",
        "net.ipv4.tcp_slow_start_after_idle",
        "net.ipv4.tcp_notsent_lowat",
    }
)
SELINUX_TYPES = frozenset({"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"})
# Volume Types (restricted): "only the following volume types" — every other inline source is refused.
RESTRICTED_VOLUME_SOURCES = frozenset(
    {
        "configMap",
        "csi",
        "downwardAPI",
        "emptyDir",
        "ephemeral",
        "persistentVolumeClaim",
        "projected",
        "secret",
        "image",
    }
)
APPARMOR_ANNOTATION = "container.apparmor.security.beta.kubernetes.io/"


@dataclass(frozen=True)
class Rule:
    profile: str
    control: str
    check: Callable[[Obj], list[str]]

    @property
    def name(self) -> str:
        return f"{self.profile} / {self.control}"


def _spec(pod: Obj) -> Obj:
    spec: Obj = pod.get("spec") or {}
    return spec


def _pod_context(pod: Obj) -> Obj:
    context: Obj = _spec(pod).get("securityContext") or {}
    return context


def _containers(pod: Obj) -> Iterator[tuple[str, Obj]]:
    """(`spec.containers[name]`-style path, container) for containers, init and ephemeral containers."""
    for field in ("containers", "initContainers", "ephemeralContainers"):
        for container in _spec(pod).get(field) or []:
            yield f"spec.{field}[{container.get('name')}]", container


def _context(container: Obj) -> Obj:
    context: Obj = container.get("securityContext") or {}
    return context


# --------------------------------------------------------------------------------------------- baseline


def host_process(pod: Obj) -> list[str]:
    """Windows HostProcess containers must not be run: `windowsOptions.hostProcess` undefined or false."""
    found = []
    if (_pod_context(pod).get("windowsOptions") or {}).get("hostProcess"):
        found.append("spec.securityContext.windowsOptions.hostProcess is true")
    for path, c in _containers(pod):
        if (_context(c).get("windowsOptions") or {}).get("hostProcess"):
            found.append(f"{path}.securityContext.windowsOptions.hostProcess is true")
    return found


def host_namespaces(pod: Obj) -> list[str]:
    """Sharing the host namespaces must be disallowed: hostNetwork, hostPID, hostIPC undefined or false."""
    return [f"spec.{f} is true" for f in ("hostNetwork", "hostPID", "hostIPC") if _spec(pod).get(f)]


def privileged_containers(pod: Obj) -> list[str]:
    """`securityContext.privileged`: false or undefined."""
    return [
        f"{path}.securityContext.privileged is true"
        for path, c in _containers(pod)
        if _context(c).get("privileged")
    ]


def capabilities_baseline(pod: Obj) -> list[str]:
    """Capabilities beyond the default set must not be added."""
    found = []
    for path, c in _containers(pod):
        extra = sorted(set((_context(c).get("capabilities") or {}).get("add") or []) - BASELINE_CAPABILITIES)
        if extra:
            found.append(f"{path}.securityContext.capabilities.add has {extra}")
    return found


def hostpath_volumes(pod: Obj) -> list[str]:
    """HostPath volumes must be forbidden."""
    return [
        f"spec.volumes[{v.get('name')}] is a hostPath"
        for v in _spec(pod).get("volumes") or []
        if "hostPath" in v
    ]


def host_ports(pod: Obj) -> list[str]:
    """HostPorts: undefined or 0."""
    return [
        f"{path}.ports[{p.get('name') or p.get('containerPort')}].hostPort is {p['hostPort']}"
        for path, c in _containers(pod)
        for p in c.get("ports") or []
        if p.get("hostPort")
    ]


def host_probes_and_lifecycle_hooks(pod: Obj) -> list[str]:
    """The `host` field of probes and lifecycle handlers (httpGet, tcpSocket): undefined or ""."""
    found = []
    for path, c in _containers(pod):
        handlers = {f"{p}": c.get(p) for p in ("livenessProbe", "readinessProbe", "startupProbe")}
        handlers.update(
            {f"lifecycle.{h}": (c.get("lifecycle") or {}).get(h) for h in ("postStart", "preStop")}
        )
        for where, handler in handlers.items():
            for kind in ("httpGet", "tcpSocket"):
                if ((handler or {}).get(kind) or {}).get("host"):
                    found.append(f"{path}.{where}.{kind}.host is set")
    return found


def apparmor(pod: Obj) -> list[str]:
    """AppArmor may not be disabled or overridden beyond the runtime's default or a localhost profile:
    `appArmorProfile.type` RuntimeDefault, Localhost or undefined; the beta annotations `runtime/default`,
    `localhost/*` or undefined."""
    found = []
    contexts = [("spec.securityContext", _pod_context(pod))] + [
        (f"{path}.securityContext", _context(c)) for path, c in _containers(pod)
    ]
    for where, context in contexts:
        kind = (context.get("appArmorProfile") or {}).get("type")
        if kind not in (None, "RuntimeDefault", "Localhost"):
            found.append(f"{where}.appArmorProfile.type is {kind}")
    for key, value in ((pod.get("metadata") or {}).get("annotations") or {}).items():
        if (
            key.startswith(APPARMOR_ANNOTATION)
            and value not in ("", "runtime/default")
            and not value.startswith("localhost/")
        ):
            found.append(f"metadata.annotations[{key}] is {value}")
    return found


def selinux(pod: Obj) -> list[str]:
    """Setting the SELinux type is restricted to the container types; a custom user or role is forbidden."""
    found = []
    contexts = [("spec.securityContext", _pod_context(pod))] + [
        (f"{path}.securityContext", _context(c)) for path, c in _containers(pod)
    ]
    for where, context in contexts:
        options = context.get("seLinuxOptions") or {}
        if options.get("type", "") not in SELINUX_TYPES:
            found.append(f"{where}.seLinuxOptions.type is {options['type']}")
        found += [f"{where}.seLinuxOptions.{f} is set" for f in ("user", "role") if options.get(f)]
    return found


def proc_mount(pod: Obj) -> list[str]:
    """The default /proc masks are required: `procMount` undefined or Default."""
    return [
        f"{path}.securityContext.procMount is {_context(c)['procMount']}"
        for path, c in _containers(pod)
        if _context(c).get("procMount") not in (None, "Default")
    ]


def seccomp_baseline(pod: Obj) -> list[str]:
    """Seccomp profile must not be explicitly set to Unconfined."""
    contexts = [("spec.securityContext", _pod_context(pod))] + [
        (f"{path}.securityContext", _context(c)) for path, c in _containers(pod)
    ]
    return [
        f"{where}.seccompProfile.type is Unconfined"
        for where, context in contexts
        if (context.get("seccompProfile") or {}).get("type") == "Unconfined"
    ]


def sysctls(pod: Obj) -> list[str]:
    """Only the safe sysctls."""
    return [
        f"spec.securityContext.sysctls has {s.get('name')}"
        for s in _pod_context(pod).get("sysctls") or []
        if s.get("name") not in SAFE_SYSCTLS
    ]


# --------------------------------------------------------------------------------------------- restricted


def volume_types(pod: Obj) -> list[str]:
    """Only configMap, csi, downwardAPI, emptyDir, ephemeral, persistentVolumeClaim, projected, secret
    (and image) volumes."""
    found = []
    for volume in _spec(pod).get("volumes") or []:
        sources = set(volume) - {"name"}
        if not sources <= RESTRICTED_VOLUME_SOURCES:
            found.append(
                f"spec.volumes[{volume.get('name')}] is {sorted(sources - RESTRICTED_VOLUME_SOURCES)}"
            )
    return found


def privilege_escalation(pod: Obj) -> list[str]:
    """`allowPrivilegeEscalation` must be false (undefined allows it)."""
    return [
        f"{path}.securityContext.allowPrivilegeEscalation is {_context(c).get('allowPrivilegeEscalation')}"
        for path, c in _containers(pod)
        if _context(c).get("allowPrivilegeEscalation") is not False
    ]


def running_as_non_root(pod: Obj) -> list[str]:
    """`runAsNonRoot` must be true: on the pod (containers may leave it undefined) or on every container;
    no container may set it false."""
    pod_value = _pod_context(pod).get("runAsNonRoot")
    found = [] if pod_value in (None, True) else ["spec.securityContext.runAsNonRoot is false"]
    for path, c in _containers(pod):
        value = _context(c).get("runAsNonRoot")
        if value is False:
            found.append(f"{path}.securityContext.runAsNonRoot is false")
        elif value is None and pod_value is not True:
            found.append(f"{path}: runAsNonRoot is set neither on the container nor on the pod")
    return found


def running_as_non_root_user(pod: Obj) -> list[str]:
    """`runAsUser` must not be 0."""
    found = ["spec.securityContext.runAsUser is 0"] if _pod_context(pod).get("runAsUser") == 0 else []
    return found + [
        f"{path}.securityContext.runAsUser is 0"
        for path, c in _containers(pod)
        if _context(c).get("runAsUser") == 0
    ]


def seccomp_restricted(pod: Obj) -> list[str]:
    """Seccomp profile must be RuntimeDefault or Localhost: on the pod, or on every container that the
    pod's setting does not cover."""
    allowed = ("RuntimeDefault", "Localhost")
    pod_type = (_pod_context(pod).get("seccompProfile") or {}).get("type")
    found = (
        [] if pod_type in (None, *allowed) else [f"spec.securityContext.seccompProfile.type is {pod_type}"]
    )
    for path, c in _containers(pod):
        kind = (_context(c).get("seccompProfile") or {}).get("type")
        if kind is None and pod_type is None:
            found.append(f"{path}: seccompProfile is set neither on the container nor on the pod")
        elif kind is not None and kind not in allowed:
            found.append(f"{path}.securityContext.seccompProfile.type is {kind}")
    return found


def capabilities_restricted(pod: Obj) -> list[str]:
    """Containers must drop ALL capabilities, and may only add back NET_BIND_SERVICE."""
    found = []
    for path, c in _containers(pod):
        capabilities = _context(c).get("capabilities") or {}
        if "ALL" not in (capabilities.get("drop") or []):
            found.append(f"{path}.securityContext.capabilities.drop lacks ALL")
        extra = sorted(set(capabilities.get("add") or []) - {"NET_BIND_SERVICE"})
        if extra:
            found.append(f"{path}.securityContext.capabilities.add has {extra}")
    return found


RULES: tuple[Rule, ...] = (
    Rule(BASELINE, "HostProcess", host_process),
    Rule(BASELINE, "Host Namespaces", host_namespaces),
    Rule(BASELINE, "Privileged Containers", privileged_containers),
    Rule(BASELINE, "Capabilities", capabilities_baseline),
    Rule(BASELINE, "HostPath Volumes", hostpath_volumes),
    Rule(BASELINE, "Host Ports", host_ports),
    Rule(BASELINE, "Host Probes / Lifecycle Hooks", host_probes_and_lifecycle_hooks),
    Rule(BASELINE, "AppArmor", apparmor),
    Rule(BASELINE, "SELinux", selinux),
    Rule(BASELINE, "/proc Mount Type", proc_mount),
    Rule(BASELINE, "Seccomp", seccomp_baseline),
    Rule(BASELINE, "Sysctls", sysctls),
    Rule(RESTRICTED, "Volume Types", volume_types),
    Rule(RESTRICTED, "Privilege Escalation", privilege_escalation),
    Rule(RESTRICTED, "Running as Non-root", running_as_non_root),
    Rule(RESTRICTED, "Running as Non-root user", running_as_non_root_user),
    Rule(RESTRICTED, "Seccomp", seccomp_restricted),
    Rule(RESTRICTED, "Capabilities", capabilities_restricted),
)
"""Every control of the restricted profile, which includes every control of the baseline profile."""


def violations(pod: Obj) -> list[str]:
    """Every rule ``pod`` breaks, each as `profile / control: what`."""
    return [f"{rule.name}: {problem}" for rule in RULES for problem in rule.check(pod)]
