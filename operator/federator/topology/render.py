"""A Topology as Mermaid flowchart text, Graphviz DOT, or SVG rendered by Graphviz's `dot`."""

from __future__ import annotations

import shutil

import graphviz

from federator.topology.model import Node, Topology

# Mermaid node shapes: (open, close).
_MERMAID_SHAPES = {
    "eventhub": ("[(", ")]"),
    "queue": ("[/", "/]"),
    "topic": (">", "]"),
    "subscription": ("(", ")"),
    "table": ("[(", ")]"),
    "task": ("[[", "]]"),
    "group": ("{{", "}}"),
}
_MERMAID_ARROWS = {"solid": "-->", "dashed": "-.->", "dotted": "-.->"}
_DOT_SHAPES = {
    "eventhub": "cylinder",
    "queue": "box3d",
    "topic": "cds",
    "subscription": "note",
    "table": "cylinder",
    "task": "box",
    "group": "hexagon",
}
_DOT_FILL = {"task": "#dbeafe", "group": "#fde68a", "subscription": "#f3f4f6"}


class GraphvizMissing(Exception):
    """`dot` is not installed."""


def render(graph: Topology, fmt: str) -> str:
    if fmt == "mermaid":
        return mermaid(graph)
    source = dot(graph)
    if fmt == "dot":
        return str(source.source)
    if shutil.which("dot") is None:
        raise GraphvizMissing(
            "SVG needs Graphviz's `dot` (Debian/Ubuntu: apt-get install graphviz; macOS: brew install "
            "graphviz); --format mermaid needs nothing"
        )
    return str(source.pipe(format="svg", encoding="utf-8"))


def _ids(graph: Topology) -> dict[str, str]:
    """Short ids for renderers that cannot take ours (Mermaid), assigned in sorted order: stable output."""
    ordered = [c.id for c in graph.sorted_clusters()] + sorted(graph.nodes)
    return {
        semantic: f"{'c' if semantic in graph.clusters else 'n'}{i}" for i, semantic in enumerate(ordered, 1)
    }


def _mermaid_text(lines: tuple[str, ...] | list[str]) -> str:
    escaped = [
        line.replace("&", "#38;").replace('"', "#34;").replace("<", "#60;").replace(">", "#62;")
        for line in lines
    ]
    return '"' + "<br/>".join(escaped) + '"'


def mermaid(graph: Topology) -> str:
    ids = _ids(graph)
    out = ["flowchart LR"]

    def node(n: Node, indent: str) -> None:
        opening, closing = _MERMAID_SHAPES[n.shape]
        out.append(f"{indent}{ids[n.id]}{opening}{_mermaid_text(n.label)}{closing}")

    for cluster in graph.sorted_clusters():
        out.append(f"  subgraph {ids[cluster.id]}[{_mermaid_text(cluster.label)}]")
        for n in graph.nodes_in(cluster.id):
            node(n, "    ")
        out.append("  end")
    for n in graph.nodes_in(None):
        node(n, "  ")
    for e in graph.edges:
        label = f"|{_mermaid_text([e.label])}|" if e.label else ""
        out.append(f"  {ids[e.source]} {_MERMAID_ARROWS[e.style]}{label} {ids[e.target]}")
    return "\n".join(out) + "\n"


def _dot_label(lines: tuple[str, ...] | list[str]) -> str:
    return "\\n".join(graphviz.escape(line) for line in lines)


def dot(graph: Topology) -> graphviz.Digraph:
    """The graph for Graphviz; every node and edge carries its semantic id (SVG `id` attributes)."""
    ids = _ids(graph)
    g = graphviz.Digraph(
        "federator",
        graph_attr={"rankdir": "LR", "fontname": "Helvetica", "fontsize": "11", "nodesep": "0.3"},
        node_attr={"fontname": "Helvetica", "fontsize": "10", "style": "filled", "fillcolor": "white"},
        edge_attr={"fontname": "Helvetica", "fontsize": "9"},
    )

    def node(target: graphviz.Digraph, n: Node) -> None:
        target.node(
            ids[n.id],
            label=_dot_label(n.label),
            shape=_DOT_SHAPES[n.shape],
            fillcolor=_DOT_FILL.get(n.shape, "white"),
            id=n.id,
            **{"class": n.shape},
        )

    for cluster in graph.sorted_clusters():
        with g.subgraph(name=f"cluster_{ids[cluster.id]}") as sub:
            sub.attr(label=_dot_label(cluster.label), style="rounded", color="#6b7280", id=cluster.id)
            for n in graph.nodes_in(cluster.id):
                node(sub, n)
    for n in graph.nodes_in(None):
        node(g, n)
    for e in graph.edges:
        g.edge(
            ids[e.source],
            ids[e.target],
            label=_dot_label([e.label]) if e.label else None,
            style=e.style,
            id=f"edge:{e.source}->{e.target}:{e.label}",
        )
    return g
