"""YAML → JSON values as kubectl reads a manifest (sigs.k8s.io/yaml over go-yaml v2), not as PyYAML would.

What differs from `yaml.safe_load`, each a way a manifest could pass here and fail at `kubectl apply`, or
the reverse:

* timestamps stay strings (go-yaml hands a timestamp-looking scalar to an untyped value as a string);
* scalars resolve as go-yaml v2 resolves them: `y`/`n` are booleans, `1e3` is a number, `12:30` is a
  string (YAML 1.1 base-60 numbers are PyYAML's alone);
* a key twice in one mapping is an error naming both lines (kubectl refuses it), not "the last wins";
* keys become strings (`1: x` → `"1"`); what JSON cannot hold (`.inf`, `.nan`, a mapping as a key) is
  an error at its field path;
* merge keys (`<<`) and aliases are expanded, recursion and excessive aliasing refused.

Messages never quote a line of the file: a line may hold a credential.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import BaseResolver
from yaml.scanner import Scanner

from federator.validation.problems import Problem, join_path
from federator.validation.secrets import shown

_TAG = "tag:yaml.org,2002:"
NULL, BOOL, INT, FLOAT, STR = (f"{_TAG}{t}" for t in ("null", "bool", "int", "float", "str"))
MERGE, BINARY, TIMESTAMP = f"{_TAG}merge", f"{_TAG}binary", f"{_TAG}timestamp"
_TRUE = {"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"}
_FALSE = {"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"}
_INT = re.compile(r"^[-+]?(0b[01_]+|0x[0-9a-fA-F_]+|0o[0-7_]+|[0-9][0-9_]*)$")
# go-yaml v2's `yamlStyleFloat`, and its spellings of infinity and not-a-number.
_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")
_SPECIAL_FLOAT = re.compile(r"^([-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN))$")
# Expanded values per document, beyond which aliasing is refused (go-yaml refuses "billion laughs" too),
# and the deepest nesting read (no manifest comes close; deeper would exhaust Python's stack).
MAX_VALUES = 200_000
MAX_DEPTH = 100


class _Resolver(BaseResolver):
    """go-yaml v2's implicit types for plain scalars: no timestamps, no base-60 numbers."""


_Resolver.add_implicit_resolver(NULL, re.compile(r"^(~|null|Null|NULL|)$"), ["~", "n", "N", ""])
_Resolver.add_implicit_resolver(
    BOOL, re.compile("^(" + "|".join(sorted(_TRUE | _FALSE)) + ")$"), list("yYnNtTfFoO")
)
_Resolver.add_implicit_resolver(INT, _INT, list("-+0123456789"))
_Resolver.add_implicit_resolver(FLOAT, _FLOAT, list("-+.0123456789"))
_Resolver.add_implicit_resolver(FLOAT, _SPECIAL_FLOAT, list("-+."))
_Resolver.add_implicit_resolver(MERGE, re.compile(r"^<<$"), ["<"])


class _Composer(Reader, Scanner, Parser, Composer, _Resolver):
    """PyYAML's node graph, resolved with go-yaml's types; values are built by `_Builder`."""

    def __init__(self, text: str) -> None:
        Reader.__init__(self, text)
        Scanner.__init__(self)
        Parser.__init__(self)
        Composer.__init__(self)
        _Resolver.__init__(self)


class ManifestError(ValueError):
    """A file that cannot be read as YAML."""


@dataclass
class Decoded:
    """One YAML document as JSON values, what kubectl would refuse in it, and where each field starts."""

    body: Any
    problems: list[Problem] = field(default_factory=list)
    lines: dict[str, int] = field(default_factory=dict)
    """Field path → line number (1-based) of the value, for messages."""


def decode_documents(text: str) -> Iterator[Decoded]:
    """Every document of a YAML stream, empty ones included (as None). Raises ManifestError for a stream
    that is not YAML, with the line and column but not the line's text."""
    composer: _Composer | None = None
    try:
        composer = _Composer(text)
        while composer.check_node():
            node = composer.get_node()
            if node is not None:
                yield _Builder().document(node)
    except yaml.MarkedYAMLError as err:
        raise ManifestError(f"not valid YAML: {_describe(err)}") from None
    except yaml.YAMLError as err:  # e.g. a control character the reader refuses
        raise ManifestError(f"not valid YAML: {err}") from None
    except RecursionError:
        raise ManifestError("not valid YAML: nested too deeply to be read") from None
    finally:
        if composer is not None:
            composer.dispose()


def _describe(err: yaml.MarkedYAMLError) -> str:
    # str(err) would quote the offending line (a snippet): only the words and the position are kept.
    words = "; ".join(w for w in (err.context, err.problem) if w)
    mark = err.problem_mark or err.context_mark
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return (words or "unreadable") + where


class _Builder:
    """Builds one document's values from its nodes, recording problems instead of stopping at the first."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []
        self.lines: dict[str, int] = {}
        self.count = 0
        self.active: set[int] = set()  # nodes being built: an alias to one of them is a recursion

    def document(self, node: Node) -> Decoded:
        body = self.value(node, [])
        return Decoded(body, self.problems, self.lines)

    def problem(self, path: list[str | int], message: str) -> None:
        self.problems.append(Problem(join_path(path), message, "yaml"))

    def value(self, node: Node, path: list[str | int], line: int | None = None) -> Any:
        """`line`: where the field starts (its key's line), when not where the value starts."""
        self.count += 1
        if self.count > MAX_VALUES:
            if self.count == MAX_VALUES + 1:
                self.problem(path, f"excessive aliasing: more than {MAX_VALUES} values after expansion")
            return None
        if len(path) > MAX_DEPTH:
            self.problem(path, f"nested deeper than {MAX_DEPTH} levels")
            return None
        self.lines.setdefault(join_path(path), line or node.start_mark.line + 1)
        if isinstance(node, ScalarNode):
            return self.scalar(node, path)
        if id(node) in self.active:
            self.problem(path, "an alias refers to a node that contains it (recursive YAML)")
            return None
        self.active.add(id(node))
        try:
            if isinstance(node, SequenceNode):
                return [self.value(item, [*path, i]) for i, item in enumerate(node.value)]
            assert isinstance(node, MappingNode)
            return self.mapping(node, path)
        finally:
            self.active.discard(id(node))

    def mapping(self, node: MappingNode, path: list[str | int]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        first_line: dict[str, int] = {}
        merges: list[Node] = []
        for key_node, value_node in node.value:
            if key_node.tag == MERGE:
                merges.append(value_node)
                continue
            key = self.key(key_node, path)
            if key is None:
                continue
            line = key_node.start_mark.line + 1
            if key in first_line:
                self.problem([*path, key], f"duplicate key {shown(key)} (lines {first_line[key]} and {line})")
            first_line.setdefault(key, line)
            out[key] = self.value(value_node, [*path, key], line)
        for merged in self.merged(merges, path):
            for key, value in merged.items():
                out.setdefault(key, value)  # explicit keys win, then earlier merges
        return out

    def merged(self, merges: list[Node], path: list[str | int]) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        for node in merges:
            sources = node.value if isinstance(node, SequenceNode) else [node]
            for source in sources:
                value = self.value(source, path) if isinstance(source, MappingNode) else None
                if not isinstance(value, dict):
                    self.problem(path, "a merge key (<<) must refer to a mapping or a list of mappings")
                    continue
                found.append(value)
        return found

    def key(self, node: Node, path: list[str | int]) -> str | None:
        if not isinstance(node, ScalarNode):
            self.problem(path, "a mapping key must be a string, number or boolean, not a collection")
            return None
        value = self.scalar(node, path)
        if isinstance(value, str):
            return value
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int):
            return str(value)
        if isinstance(value, float) and math.isfinite(value):
            return str(int(value)) if value.is_integer() and abs(value) < 1e21 else repr(value)
        self.problem(path, f"a mapping key cannot be {'null' if value is None else shown(node.value)}")
        return None

    def scalar(self, node: ScalarNode, path: list[str | int]) -> Any:
        text: str = node.value
        tag = node.tag
        try:
            if tag == NULL:
                return None
            if tag == BOOL:
                if text not in _TRUE | _FALSE:
                    raise ValueError(text)
                return text in _TRUE
            if tag in (INT, FLOAT):
                return self.number(text, path)
            if tag == BINARY:
                # go-yaml gives the decoded bytes as a string; JSON carries them as UTF-8.
                return base64.b64decode("".join(text.split()), validate=True).decode("utf-8", "replace")
        except (ValueError, binascii.Error):
            if node.style is None and tag != BINARY:
                return text  # a plain scalar go-yaml cannot read as a number stays a string
            self.problem(path, f"{shown(text)} cannot be read as the {tag.removeprefix(_TAG)} it is tagged")
            return text
        return text  # strings, timestamps, merge keys in value position, custom tags

    def number(self, text: str, path: list[str | int]) -> Any:
        if _SPECIAL_FLOAT.match(text):
            self.problem(path, f"{shown(text)} is not a JSON number (infinity and NaN have no JSON form)")
            return text
        try:
            return _integer(text)
        except ValueError:
            # `08` is no octal integer: go-yaml reads it as the float 8.
            value = float(text.replace("_", ""))
        if not math.isfinite(value):
            self.problem(path, f"{shown(text)} is out of the range of a JSON number")
            return text
        return value


def _integer(text: str) -> int:
    plain = text.replace("_", "")
    sign = -1 if plain.startswith("-") else 1
    digits = plain.lstrip("+-")
    if len(digits) > 1 and digits[0] == "0" and digits[1].isdigit():
        return sign * int(digits, 8)
    return sign * int(digits, 0)
