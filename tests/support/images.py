"""Run a built image the way a Kubernetes node would, without a container engine.

``tools/build-images`` builds the images into buildah's local storage. :func:`open_image` mounts one (a
throwaway buildah working container) and :meth:`ImageRoot.start` runs a command from it through
``support/in_image.py`` under ``unshare``: a private mount and PID namespace (the command is PID 1), the
image's root file system **read-only**, tmpfs ("emptyDir") volumes where the pod would have them, host
files bound read-only or writable, the image's environment with the pod's added, and the image's user
unless the pod sets another. The network is the host's, so the command reaches a fake API server or an
emulator on 127.0.0.1.

Needs root and buildah (``tools/install-system-packages --images``).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

IN_IMAGE = Path(__file__).with_name("in_image.py")


def buildah(*args: str, timeout: float = 120) -> str:
    done = subprocess.run(["buildah", *args], capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"buildah {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def image_exists(name: str) -> bool:
    if shutil.which("buildah") is None:
        return False
    done = subprocess.run(["buildah", "inspect", "--type", "image", name], capture_output=True, timeout=60)
    return done.returncode == 0


@dataclass(frozen=True)
class ImageConfig:
    """The OCI image config fields a container runtime starts from."""

    entrypoint: list[str]
    cmd: list[str]
    user: str
    env: dict[str, str]
    working_dir: str
    exposed_ports: list[str]

    @classmethod
    def read(cls, image: str) -> ImageConfig:
        config: dict[str, Any] = json.loads(buildah("inspect", "--type", "image", image))["OCIv1"]["config"]
        env = dict(entry.split("=", 1) for entry in config.get("Env") or [])
        return cls(
            entrypoint=list(config.get("Entrypoint") or []),
            cmd=list(config.get("Cmd") or []),
            user=config.get("User") or "0:0",
            env=env,
            working_dir=config.get("WorkingDir") or "/",
            exposed_ports=sorted(config.get("ExposedPorts") or {}),
        )


@dataclass
class Run:
    """A command running in the image (PID 1 of its own PID namespace)."""

    process: subprocess.Popen[bytes]
    log: Path
    started: float = field(default_factory=time.monotonic)

    def wait(self, timeout: float) -> int:
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"still running after {timeout} s:\n{self.output()[-4000:]}") from None

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def terminate(self, grace: float = 20) -> int:
        """SIGTERM to the image's PID 1 (as the kubelet sends it), SIGKILL after ``grace`` seconds."""
        pid1 = self._pid1()
        if pid1 is not None:
            os.kill(pid1, signal.SIGTERM)
        try:
            return self.process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            self.kill()
            return self.process.wait(timeout=10)

    def kill(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)  # unshare and everything in its namespace
            self.process.wait(timeout=10)

    def _pid1(self) -> int | None:
        try:
            children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children").read_text().split()
        except OSError:
            return None
        return int(children[0]) if children else None


@dataclass
class ImageRoot:
    """A mounted image: its root file system and config."""

    image: str
    root: Path
    config: ImageConfig
    workdir: Path
    runs: int = 0

    def start(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        user: str | None = None,
        binds: Mapping[str, Path] | None = None,
        writable: Mapping[str, Path] | None = None,
        tmpfs: Sequence[str] = ("/tmp",),
        log_name: str = "run",
    ) -> Run:
        """Start ``argv`` (resolved in the image's PATH) as the image's user, or ``user`` ("uid:gid")."""
        spec = {
            "root": str(self.root),
            "argv": list(argv),
            "env": {**self.config.env, **(env or {})},
            "user": user or self.config.user,
            "workdir": self.config.working_dir,
            "binds": {target: str(source) for target, source in (binds or {}).items()},
            "writable": {target: str(source) for target, source in (writable or {}).items()},
            "tmpfs": list(tmpfs),
        }
        self.runs += 1
        log = self.workdir / f"{self.runs:02d}-{log_name}.log"
        output: IO[bytes]
        with log.open("ab") as output:
            process = subprocess.Popen(
                ["unshare", "--mount", "--pid", "--fork", "--kill-child", "--propagation", "private",
                 # -I: without the script's folder on sys.path (tests/support has a selectors.py)
                 sys.executable, "-I", str(IN_IMAGE), json.dumps(spec)],
                stdout=output, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            )
        return Run(process, log)

    def installers_and_compilers(self) -> tuple[list[str], list[str]]:
        """(Python packaging modules importable, installer and compiler commands on PATH) in the image."""
        script = (
            "import importlib.util as u, json, shutil; print(json.dumps(["
            "[m for m in ('pip', 'setuptools') if u.find_spec(m)],"
            "[t for t in ('pip', 'pip3', 'gcc', 'cc', 'javac', 'apt-get') if shutil.which(t)]]))"
        )
        code, output = self.run(["python3.11", "-c", script], log_name="installers")
        assert code == 0, output
        modules, commands = json.loads(output)
        return modules, commands

    def run(self, argv: Sequence[str], timeout: float = 120, **options: Any) -> tuple[int, str]:
        """Run to the end: (exit code, output)."""
        run = self.start(argv, **options)
        code = run.wait(timeout)
        return code, run.output()


@contextmanager
def open_image(image: str, workdir: Path) -> Iterator[ImageRoot]:
    """Mount ``image`` (a throwaway working container) for as long as the block runs."""
    container = buildah("from", "--pull=never", "--quiet", image).strip()
    try:
        root = Path(buildah("mount", container).strip())
        yield ImageRoot(image, root, ImageConfig.read(image), workdir)
    finally:
        subprocess.run(["buildah", "umount", container], capture_output=True, timeout=60)
        subprocess.run(["buildah", "rm", container], capture_output=True, timeout=60)
