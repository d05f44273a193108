"""The topology picture (`federator graph`, `kubectl federator graph`): objects → a graph → Mermaid, DOT
or SVG."""

from federator.topology.build import build
from federator.topology.render import GraphvizMissing, render

__all__ = ["GraphvizMissing", "build", "render"]
