"""The repository's shape, checked: four distributions whose declared dependencies are what each imports,
an import contract that names every module, and no path that leaves the clone."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))

# Distribution → (its pyproject, its package directory, extras that are not runtime dependencies).
DISTRIBUTIONS = {
    "federator-contract": (ROOT / "contract", ROOT / "contract" / "federator_contract", set()),
    "federator": (ROOT, ROOT / "operator" / "federator", {"dev", "local"}),
    "federator-emulator": (ROOT / "emulator", ROOT / "emulator" / "federator_emulator", set()),
    "federator-spark": (ROOT / "spark-apps", ROOT / "spark-apps" / "federator_spark", set()),
}
OWN = {
    "federator_contract": "federator-contract",
    "federator": "federator",
    "federator_emulator": "federator-emulator",
    "federator_spark": "federator-spark",
}
_NAME = re.compile(r"^[A-Za-z0-9._-]+")


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared(project_dir: Path, skipped_extras: set[str]) -> tuple[set[str], set[str]]:
    """(every declared dependency, those marked `# not imported: <why>` in the file)."""
    text = (project_dir / "pyproject.toml").read_text(encoding="utf-8")
    project = tomllib.loads(text)["project"]
    requirements = list(project.get("dependencies", []))
    for extra, items in project.get("optional-dependencies", {}).items():
        if extra not in skipped_extras:
            requirements += items
    declared = {_normal(_NAME.match(r).group(0)) for r in requirements}  # type: ignore[union-attr]
    marked = re.finditer(r'^\s*"([A-Za-z0-9._-]+)[^"]*",\s*# not imported', text, re.M)
    unimported = {_normal(m.group(1)) for m in marked}
    return declared, unimported


def _imported(package_dir: Path, top_level_only: bool = False) -> set[str]:
    """Distributions the package's modules import (absolute imports outside the standard library);
    `top_level_only`: only those imported when a module is loaded, not inside a function."""
    modules: set[str] = set()
    for path in package_dir.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body if top_level_only else ast.walk(tree):
            if isinstance(node, ast.Import):
                modules.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules.add(node.module)
    owners = importlib.metadata.packages_distributions()
    found: set[str] = set()
    for module in modules:
        top = module.split(".")[0]
        if top in sys.stdlib_module_names or top == "__future__" or top == package_dir.name:
            continue
        if top in OWN:
            found.add(OWN[top])
        elif top == "azure":  # a namespace shared by many distributions: `azure.mgmt.dns` → azure-mgmt-dns
            parts = module.split(".")
            found.add("-".join(parts[:3] if parts[1] in ("mgmt", "storage") else parts[:2]).replace("_", "-"))
        else:
            found.update(_normal(d) for d in owners[top])
    return found


@pytest.mark.parametrize("distribution", sorted(DISTRIBUTIONS))
def test_each_distribution_declares_exactly_what_it_imports(distribution: str) -> None:
    project_dir, package_dir, skipped = DISTRIBUTIONS[distribution]
    declared, unimported = _declared(project_dir, skipped)
    imported = _imported(package_dir)
    assert imported - declared == set(), "imported but not declared"
    assert declared - imported - unimported == set(), "declared, never imported (say `# not imported: why`)"


def test_no_runtime_imports_another_and_the_contract_imports_none() -> None:
    for distribution, (_, package_dir, _) in DISTRIBUTIONS.items():
        others = {OWN[p] for p in OWN if OWN[p] not in (distribution, "federator-contract")}
        assert _imported(package_dir) & others == set(), distribution
    # Its optional extras (`checks`: jsonschema, fastavro) are imported inside the functions that need them.
    assert _imported(DISTRIBUTIONS["federator-contract"][1], top_level_only=True) == {"pydantic"}


def _children(package_dir: Path) -> set[str]:
    return {p.stem for p in package_dir.glob("*.py") if p.stem != "__init__"} | {
        p.name for p in package_dir.iterdir() if p.is_dir() and (p / "__init__.py").exists()
    }


def test_the_layer_contracts_name_every_module_of_their_package() -> None:
    """A module left out of its package's layers would escape the contract (import-linter ignores it)."""
    contracts = PYPROJECT["tool"]["importlinter"]["contracts"]
    layered = {c["containers"][0]: c["layers"] for c in contracts if c["type"] == "layers"}
    packages = {"federator_contract": DISTRIBUTIONS["federator-contract"][1], "bench": ROOT / "bench"}
    packages |= {p.name: p for _, p, _ in DISTRIBUTIONS.values()}
    for name, directory in packages.items():
        named = {m.strip() for layer in layered[name] for m in layer.split("|")}
        assert _children(directory) - named == set(), f"{name}: modules outside every layer"
        assert named - _children(directory) == set(), f"{name}: layers naming nothing"


def test_every_python_package_directory_has_an_init_module() -> None:
    """Namespace packages are invisible to the import contract (import-linter does not follow them)."""
    for _, package_dir, _ in DISTRIBUTIONS.values():
        for directory in [package_dir, *package_dir.rglob("*")]:
            if directory.is_dir() and directory.name != "__pycache__" and any(directory.glob("*.py")):
                assert (directory / "__init__.py").exists(), directory


_SIBLING = re.compile(r"\.\." r"/shared")  # spelt in two parts, so that this file does not match itself
_PARENTS = re.compile(r"Path\(__file__\)\.resolve\(\)\.parents\[(\d+)\]")


def test_no_file_reaches_outside_the_repository() -> None:
    """Contributors have only the clone: nothing reads a sibling folder of the repository."""
    tracked = [
        p
        for d in ("contract", "operator", "emulator", "spark-apps", "tests", "bench", "tools")
        for p in (ROOT / d).rglob("*")
        if p.is_file() and p.suffix in ("", ".py", ".sh")
    ]
    tracked += [ROOT / "dev", ROOT / ".ci" / "run"]
    for path in tracked:
        text = path.read_text(encoding="utf-8", errors="replace")
        assert _SIBLING.search(text) is None, path
        for match in _PARENTS.finditer(text):
            reached = path.resolve().parents[int(match.group(1))]
            assert reached == ROOT or ROOT in reached.parents, f"{path}: parents[{match.group(1)}]: {reached}"
        assert re.search(r'parents?\[\d\]\s*/\s*"shared"', text) is None, path
