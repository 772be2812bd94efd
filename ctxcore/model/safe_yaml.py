"""Safe, located YAML loading for pipeline files.

PyYAML composes the node tree; this module turns nodes into plain values itself
so that it can (1) remember the line and column of every key and value, (2)
reject duplicate keys, (3) allow only the plain scalar tags (no object
construction), (4) cap the size of the document and of alias expansion, and (5)
interpolate ``${VAR}`` / ``${VAR:-default}`` in strings. All problems of a file
are collected, not only the first.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from ctxcore.errors import ConfigIssue

__all__ = ["LoadedYaml", "load_yaml", "format_path", "MAX_DOCUMENT_BYTES", "MAX_NODES", "MAX_DEPTH"]

MAX_DOCUMENT_BYTES = 1_000_000
MAX_NODES = 50_000
#: deepest nesting of a pipeline document (real pipelines nest about 6 levels).
MAX_DEPTH = 50

_TAG = "tag:yaml.org,2002:"
_SCALAR_TAGS = {_TAG + t for t in ("str", "int", "float", "bool", "null")}
_TIMESTAMP = _TAG + "timestamp"
_TRUE_WORDS = {"yes", "y", "on", "true"}
_INTERPOLATION = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-(.*?))?\}")

Path = tuple[Any, ...]


def format_path(path: Path) -> str:
    """``("filters", 1, "type")`` -> ``filters[1].type``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


@dataclass
class LoadedYaml:
    """The plain data of a document plus where each part of it was written."""

    data: Any
    file: str
    values: dict[Path, tuple[int, int]] = field(default_factory=dict)
    keys: dict[Path, tuple[int, int]] = field(default_factory=dict)
    issues: list[ConfigIssue] = field(default_factory=list)
    #: values YAML read as booleans from an unquoted word (``off``, ``yes``...): path -> the word written
    bool_words: dict[Path, str] = field(default_factory=dict)

    def quote_hint(self, path: Path) -> str:
        """`` — YAML reads unquoted off as false; quote it: 'off'`` when ``path`` (or its parent) was such a word."""
        for p in (tuple(path), tuple(path)[:-1]):
            word = self.bool_words.get(p)
            if word is not None:
                return f" — YAML reads unquoted {word} as {str(word.lower() in _TRUE_WORDS).lower()}; quote it: '{word}'"
        return ""

    def issue(self, path: Path, message: str, *, at_key: bool = False) -> ConfigIssue:
        """A :class:`ConfigIssue` located at ``path`` (or its nearest located parent)."""
        line, col = self.locate(path, at_key=at_key)
        return ConfigIssue(message=message, path=format_path(path), file=self.file, line=line, column=col)

    def locate(self, path: Path, *, at_key: bool = False) -> tuple[int | None, int | None]:
        """1-based (line, column) of ``path``'s key or value, else of its closest ancestor."""
        path = tuple(path)
        if at_key and path in self.keys:
            return self.keys[path]
        while path:
            if path in self.values:
                return self.values[path]
            path = path[:-1]
        return self.values.get((), (None, None))


class _Converter:
    def __init__(self, file: str, env: Mapping[str, str]) -> None:
        self.out = LoadedYaml(data=None, file=file)
        self.env = env
        self.nodes = 0
        self.loader = yaml.SafeLoader("")

    def mark(self, node: yaml.Node) -> tuple[int, int]:
        return node.start_mark.line + 1, node.start_mark.column + 1

    def fail(self, node: yaml.Node, path: Path, message: str) -> None:
        line, col = self.mark(node)
        self.out.issues.append(ConfigIssue(message, format_path(path), self.out.file, line, col))

    def convert(self, node: yaml.Node, path: Path) -> Any:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise _TooLarge(node)
        if len(path) > MAX_DEPTH:
            raise _TooDeep(node)
        self.out.values[path] = self.mark(node)
        if isinstance(node, yaml.ScalarNode):
            return self.scalar(node, path)
        if isinstance(node, yaml.SequenceNode):
            if node.tag != _TAG + "seq":
                self.fail(node, path, f"tag {node.tag!r} is not allowed (plain lists only)")
            return [self.convert(child, path + (i,)) for i, child in enumerate(node.value)]
        if isinstance(node, yaml.MappingNode):
            if node.tag != _TAG + "map":
                self.fail(node, path, f"tag {node.tag!r} is not allowed (plain mappings only)")
            return self.mapping(node, path)
        self.fail(node, path, "unsupported YAML node")  # pragma: no cover - the composer makes only these
        return None

    def mapping(self, node: yaml.MappingNode, path: Path) -> dict[str, Any]:
        result: dict[str, Any] = {}
        merged: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _TAG + "merge":
                merged.update(self.merge(value_node, path))
                continue
            if not isinstance(key_node, yaml.ScalarNode):
                self.fail(key_node, path, "mapping keys must be plain strings")
                continue
            key = str(self.loader.construct_object(key_node)) if key_node.tag in _SCALAR_TAGS else key_node.value
            if key in result:
                line, _ = self.out.keys[path + (key,)]
                self.fail(key_node, path + (key,), f"duplicate key {key!r} (first defined on line {line})")
                continue
            self.out.keys[path + (key,)] = self.mark(key_node)
            result[key] = self.convert(value_node, path + (key,))
        return {**{k: v for k, v in merged.items() if k not in result}, **result}

    def merge(self, node: yaml.Node, path: Path) -> dict[str, Any]:
        sources = node.value if isinstance(node, yaml.SequenceNode) else [node]
        merged: dict[str, Any] = {}
        for source in sources:
            value = self.convert(source, path)
            if not isinstance(value, dict):
                self.fail(source, path, "a '<<' merge needs a mapping (or a list of mappings)")
                continue
            merged = {**value, **merged}
        return merged

    def scalar(self, node: yaml.ScalarNode, path: Path) -> Any:
        if node.tag == _TIMESTAMP:
            return node.value  # keep dates as the text written; pipelines hold no datetimes
        if node.tag not in _SCALAR_TAGS:
            self.fail(node, path, f"tag {node.tag!r} is not allowed (no object construction in pipeline files)")
            return None
        value = self.loader.construct_object(node)
        if isinstance(value, bool) and node.style is None:
            self.out.bool_words[path] = node.value
        if isinstance(value, str) and "$" in value:
            value = self.interpolate(value, node, path)
        return value

    def interpolate(self, text: str, node: yaml.Node, path: Path) -> str:
        def replace(match: re.Match[str]) -> str:
            if match.group(0) == "$$":
                return "$"
            name, default = match.group(1), match.group(2)
            value = self.env.get(name)
            if value is None or (value == "" and default is not None):
                if default is None:
                    self.fail(node, path, f"environment variable {name!r} is not set (write ${{{name}:-default}} to give a default)")
                    return ""
                return default
            return value

        return _INTERPOLATION.sub(replace, text)


class _TooLarge(Exception):
    def __init__(self, node: yaml.Node) -> None:
        self.node = node


class _TooDeep(_TooLarge):
    pass


def load_yaml(text: str, *, file: str = "<string>", env: Mapping[str, str] | None = None) -> LoadedYaml:
    """Parse one YAML document into plain data with positions and every problem found."""
    import os

    converter = _Converter(file, os.environ if env is None else env)
    out = converter.out
    if len(text.encode("utf-8", "surrogatepass")) > MAX_DOCUMENT_BYTES:
        out.issues.append(ConfigIssue(f"file is larger than {MAX_DOCUMENT_BYTES} bytes; a pipeline file should be small", file=file))
        return out
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except RecursionError:  # flow nesting like [[[[...]]]] deeper than the parser's stack
        out.issues.append(ConfigIssue(f"the document is nested too deeply (the limit is {MAX_DEPTH} levels)", file=file))
        return out
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (None, None)
        problem = " ".join(p for p in (exc.context, exc.problem) if p)
        out.issues.append(ConfigIssue(f"invalid YAML: {problem}", file=file, line=line, column=col))
        return out
    except yaml.YAMLError as exc:
        out.issues.append(ConfigIssue(f"invalid YAML: {exc}", file=file))
        return out
    if node is None:
        out.issues.append(ConfigIssue("the file is empty; a pipeline needs at least 'version: 1'", file=file, line=1, column=1))
        return out
    try:
        out.data = converter.convert(node, ())
        if out.data is None and not out.issues:
            out.issues.append(ConfigIssue("the document is empty (null); a pipeline needs at least 'version: 1'", file=file, line=1, column=1))
    except _TooDeep as exc:
        line, col = converter.mark(exc.node)
        out.issues.append(ConfigIssue(f"the document is nested deeper than {MAX_DEPTH} levels", file=file, line=line, column=col))
        out.data = None
    except _TooLarge as exc:
        line, col = converter.mark(exc.node)
        out.issues.append(
            ConfigIssue(f"document expands to more than {MAX_NODES} nodes (alias expansion capped)", file=file, line=line, column=col)
        )
        out.data = None
    return out
