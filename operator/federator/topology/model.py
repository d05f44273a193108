"""The topology as a graph: namespaces (clusters) holding entities, tasks and FailoverGroups as nodes,
routes as edges. Ids are semantic and stable (`task:default/orders-router`), so a picture can be checked
node by node and edge by edge."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Shape = Literal["eventhub", "queue", "topic", "subscription", "table", "task", "group"]
Style = Literal["solid", "dashed", "dotted"]


@dataclass(frozen=True)
class Cluster:
    id: str
    label: tuple[str, ...]


@dataclass(frozen=True)
class Node:
    id: str
    shape: Shape
    label: tuple[str, ...]
    cluster: str | None = None


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    label: str = ""
    style: Style = "solid"


@dataclass
class Topology:
    clusters: dict[str, Cluster] = field(default_factory=dict)
    nodes: dict[str, Node] = field(default_factory=dict)
    edges: list[Edge] = field(default_factory=list)

    def cluster(self, id_: str, *label: str) -> str:
        """Add a cluster, or extend the label of an existing one with lines it does not have yet."""
        before = self.clusters.get(id_)
        lines = list(before.label) if before else []
        lines += [line for line in label if line not in lines]
        self.clusters[id_] = Cluster(id_, tuple(lines))
        return id_

    def node(self, id_: str, shape: Shape, *label: str, cluster: str | None = None) -> str:
        """Add a node once; a later, longer description of the same node (a subscription with its rules)
        replaces a shorter one."""
        before = self.nodes.get(id_)
        if before is None or len(label) > len(before.label):
            self.nodes[id_] = Node(id_, shape, tuple(label), cluster)
        return id_

    def edge(self, source: str, target: str, label: str = "", style: Style = "solid") -> None:
        edge = Edge(source, target, label, style)
        if edge not in self.edges:
            self.edges.append(edge)

    def sorted_clusters(self) -> list[Cluster]:
        return [self.clusters[k] for k in sorted(self.clusters)]

    def nodes_in(self, cluster: str | None) -> list[Node]:
        return sorted((n for n in self.nodes.values() if n.cluster == cluster), key=lambda n: n.id)
