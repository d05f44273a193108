"""Inside ``unshare --mount --pid --fork`` (support/images.py): make a pod-like root, exec the command.

One argument, a JSON object: root (the image's mounted root file system), argv, env, user ("uid:gid"),
workdir, binds and writable ({path in the image: host path}), tmpfs (paths in the image). The root is
bind-mounted, given /proc (of the new PID namespace), the host's /dev, /etc/hosts and /etc/resolv.conf,
the volumes, and then made read-only, like a pod's ``readOnlyRootFilesystem: true``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path


def mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True)


def mount_point(root: Path, target: str, like: Path) -> Path:
    point = root / target.lstrip("/")
    if like.is_dir():
        point.mkdir(parents=True, exist_ok=True)
    else:
        point.parent.mkdir(parents=True, exist_ok=True)
        point.touch(exist_ok=True)
    return point


def main() -> None:
    spec = json.loads(sys.argv[1])
    root = Path(tempfile.mkdtemp(prefix="image-root-"))
    mount("--bind", spec["root"], str(root))
    mount("-t", "proc", "proc", str(mount_point(root, "/proc", Path("/proc"))))
    mount("--rbind", "/dev", str(mount_point(root, "/dev", Path("/dev"))))
    for target in spec["tmpfs"]:
        mount("-t", "tmpfs", "-o", "mode=1777,size=1g", "tmpfs", str(mount_point(root, target, Path("/"))))
    readonly = {"/etc/hosts": "/etc/hosts", "/etc/resolv.conf": "/etc/resolv.conf", **spec["binds"]}
    for target, source in readonly.items():
        point = str(mount_point(root, target, Path(source)))
        mount("--bind", source, point)
        mount("-o", "remount,bind,ro", point)
    for target, source in spec["writable"].items():
        mount("--bind", source, str(mount_point(root, target, Path(source))))
    mount("-o", "remount,bind,ro", str(root))

    uid, _, gid = spec["user"].partition(":")
    os.chroot(root)
    os.chdir(spec["workdir"])
    os.setgroups([])
    os.setgid(int(gid or uid))
    os.setuid(int(uid))
    argv = spec["argv"]
    os.execvpe(argv[0], argv, spec["env"])


if __name__ == "__main__":
    main()
