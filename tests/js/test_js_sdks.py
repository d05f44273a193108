"""Microsoft's JavaScript Azure SDKs, unmodified, against the emulator: each ``*.test.mjs`` file here runs
under ``node --test`` with an emulator of its own (``emulator.yaml``) and the session's Azurite.

The JS files read the emulator's ready file as an application would (``support/emulator.mjs``). The npm
packages are pinned in ``package-lock.json`` and installed by ``tools/install-js-sdks`` (``./dev setup``);
a missing install is done here, so CI never passes by skipping.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from federator.local.azurite import RunningAzurite
from federator_emulator.testing import EmulatorFactory

pytestmark = pytest.mark.js

HERE = Path(__file__).parent
ROOT = HERE.parent.parent
CONFIG = yaml.safe_load((HERE / "emulator.yaml").read_text())
FILES = sorted(path.name for path in HERE.glob("*.test.mjs"))
NODE_TIMEOUT_SECONDS = 180
NODE_MINIMUM = (20, 14)
NODE_MINIMUM_TEXT = "20.14"


@pytest.fixture(scope="session")
def node_modules() -> Path:
    node = shutil.which("node")
    assert node is not None, f"node not found: install Node.js {NODE_MINIMUM_TEXT}+ (Debian: nodejs npm)"
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    found = tuple(int(part) for part in version.lstrip("v").split(".")[:2])
    # --test-force-exit (a failed test must not leave an SDK client holding the process) came in 20.14.
    assert found >= NODE_MINIMUM, f"Node.js {version} is too old: the JS SDK tests need {NODE_MINIMUM_TEXT}+"
    subprocess.run(
        [str(ROOT / "tools" / "install-js-sdks")], check=True, timeout=600, stdout=subprocess.DEVNULL
    )
    return HERE / "node_modules"


@pytest.mark.parametrize("test_file", FILES)
def test_javascript_sdk_scenarios(
    test_file: str,
    node_modules: Path,
    emulator_factory: EmulatorFactory,
    azurite_server: RunningAzurite,
    tmp_path: Path,
) -> None:
    emulator = emulator_factory(CONFIG)
    ready = tmp_path / "ready.json"
    ready.write_text(json.dumps(emulator.ready_document()))
    env = {
        **os.environ,
        "FEDERATOR_EMULATOR_READY": str(ready),
        "AZURITE_CONNECTION_STRING": azurite_server.connection_string(),
        # Node trusts the emulator's CA for AMQP over TLS, WebSockets and its Entra token endpoint.
        "NODE_EXTRA_CA_CERTS": str(emulator.ca_path),
    }
    result = subprocess.run(
        ["node", "--test", "--test-force-exit", "--test-reporter=spec", test_file],
        cwd=HERE,
        env=env,
        capture_output=True,
        text=True,
        timeout=NODE_TIMEOUT_SECONDS,
    )
    assert result.returncode == 0, f"node --test {test_file} failed:\n{result.stdout}\n{result.stderr}"
