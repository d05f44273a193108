"""A member's region outage in a local run, for drills: the emulator takes the namespaces named in
`<state>/emulator/outages` down (connections refused, open ones closed) until they leave the file
(docs/emulator.md#outages). The file is removed at each start of the emulator."""

from __future__ import annotations

from federator.local.state import StateDir
from federator_contract.files import write_atomically


def down_namespaces(state: StateDir) -> set[str]:
    """The emulator namespaces in an outage now."""
    try:
        text = state.emulator_outages.read_text(encoding="utf-8")
    except FileNotFoundError:
        return set()
    return {name for line in text.splitlines() if (name := line.split("#", 1)[0].strip())}


def set_outage(state: StateDir, namespace: str, down: bool) -> None:
    """Take an emulator namespace down, or bring it back; the emulator applies it within 0.1 s."""
    wanted = down_namespaces(state) - {namespace} | ({namespace} if down else set())
    write_atomically(state.emulator_outages, "".join(f"{name}\n" for name in sorted(wanted)))
