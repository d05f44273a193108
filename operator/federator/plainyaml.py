"""YAML as people, diff tools and GitOps reviewers read it: block style, keys in the order given, and
no anchors or aliases. PyYAML writes `&id001` / `*id001` whenever one Python object appears twice in a
document (a list two pod templates share, one CEL rule set on several CRD fields); every YAML document
Federator prints or writes goes through `dump` instead."""

from __future__ import annotations

from typing import Any

import yaml


class _PlainDumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True  # repeat the value in full wherever it appears


def dump(data: Any, *, width: int | None = None) -> str:
    """One YAML document; ``width`` is where long scalars wrap (PyYAML's default, 80, when None)."""
    text: str = yaml.dump(data, Dumper=_PlainDumper, sort_keys=False, allow_unicode=True, width=width)
    return text
