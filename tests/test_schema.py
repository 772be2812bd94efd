"""The pipeline JSON Schema (ctxcore.pipeline.schema, ``ctx pipeline schema``) against the loader.

The schema is checked with a real JSON Schema validator (``jsonschema``,
draft 2020-12) and compared with :meth:`Pipeline.from_dict` on the shipped
presets, the examples and mutated pipelines: where the schema can express a
rule, a pipeline is valid by the schema exactly when the loader accepts it.
"""

from __future__ import annotations

import copy
import functools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxcore.errors import ConfigError
from ctxcore.model.safe_yaml import load_yaml
from ctxcore.pipeline.schema import pipeline_schema
from ctxcore.pipeline.spec import Pipeline, PipelineSpec
from ctxcore.plugins.host import PluginHost

ROOT = Path(__file__).resolve().parent.parent
PRESETS = sorted((ROOT / "plugins/providers/ctxcore-providers/ctxcore_providers/presets").glob("*.yaml"))
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
_SLOTS = {"counter": "counter", "providers": "provider", "filters": "filter", "checkpointer": "checkpointer", "memory": "memory"}
_BOOL_WORDS = {"yes", "no", "on", "off", "true", "false", "t", "f", "y", "n"}


@pytest.fixture(scope="module")
def full_host() -> PluginHost:
    """Every installed plugin (the conftest turns autoload off for other tests)."""
    return PluginHost.load(env={})


@pytest.fixture(scope="module")
def schema(full_host: PluginHost) -> dict[str, Any]:
    return pipeline_schema(full_host)


@pytest.fixture(scope="module")
def validator(schema: dict[str, Any]) -> jsonschema.protocols.Validator:
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _loads(data: Any, host: PluginHost) -> bool:
    try:
        Pipeline.from_dict(data, host=host)
    except ConfigError:
        return False
    return True


def _interpolated(path: Path) -> Any:
    """The file as if its ``${VAR:-default}`` defaults were written in place (``"false"`` -> ``false``)."""
    loaded = load_yaml(path.read_text(encoding="utf-8"), file=str(path), env={})
    assert not loaded.issues, loaded.issues
    return _retyped(loaded.data)


def _retyped(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _retyped(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_retyped(v) for v in value]
    if isinstance(value, str) and value and "\n" not in value:
        typed = yaml.safe_load(value) if value[0] not in "{[&*!|>'\"%@`#" else value
        return typed if isinstance(typed, (bool, int, float)) else value
    return value


def _errors(validator: jsonschema.protocols.Validator, data: Any) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(data)]


# ------------------------------------------------------------------ shape
def test_schema_is_valid_draft_2020_12_and_names_every_component(schema: dict[str, Any], full_host: PluginHost) -> None:
    """The schema is a valid 2020-12 schema and each installed component has a definition."""
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert set(schema["properties"]) == set(PipelineSpec.model_fields)
    for component in full_host.registry.all():
        names = schema["$defs"][f"step.{component.kind}"]["then"]["enum"]
        assert component.qualified_name in names
    assert "compaction" in schema["$defs"]["step.filter"]["then"]["enum"]


@pytest.mark.parametrize("path", PRESETS + EXAMPLES, ids=lambda p: p.name)
def test_shipped_pipelines_validate(path: Path, validator: jsonschema.protocols.Validator, full_host: PluginHost) -> None:
    """Every shipped preset and example validates as written (``${VAR}`` uninterpolated) and loads."""
    assert PRESETS and EXAMPLES
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert _errors(validator, raw) == []
    assert _errors(validator, _interpolated(path)) == []  # the same file with the defaults written in
    assert _loads(_interpolated(path), full_host)


# ---------------------------------------------------------- rejections
BASE = {
    "version": 1,
    "model": {"context_window": 8000, "reserve_output_tokens": 500},
    "counter": "approximate",
    "providers": [{"type": "static_prompt", "text": "You are terse."}, {"type": "history", "id": "chat"}],
    "filters": [{"type": "compaction", "max_tokens": 4000, "summarizer": {"type": "extractive"}}, "token_budget"],
}


def _with(path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    data = copy.deepcopy(BASE)
    target: Any = data
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    return data


@pytest.mark.parametrize(
    ("case", "data", "where"),
    [
        ("wrong top-level key", _with(("fitlers",), []), ""),
        ("wrong key under model", _with(("model", "context_windw"), 10), "model"),
        ("wrong key in a step", _with(("providers", 0, "txt"), "x"), "providers/0"),
        ("wrong key deep in a step", _with(("filters", 0, "summarizer", "line_char"), 100), "filters/0/summarizer"),
        ("wrong type of an option", _with(("filters", 0, "max_tokens"), "many"), "filters/0/max_tokens"),
        ("wrong type of a top-level key", _with(("model", "context_window"), [1]), "model/context_window"),
        ("option out of range", _with(("filters", 0, "trigger_ratio"), 1.5), "filters/0/trigger_ratio"),
        ("unknown choice", _with(("filters", 0, "mode"), "shrink"), "filters/0/mode"),
        ("unknown component", _with(("providers", 1, "type"), "histroy"), "providers/1"),
        ("unknown component by name", _with(("filters", 1), "token_budgte"), "filters/1"),
        ("step without type", _with(("providers", 1), {"id": "chat"}), "providers/1"),
        ("wrong version", _with(("version",), 2), "version"),
        ("missing version", {k: v for k, v in BASE.items() if k != "version"}, ""),
    ],
)
def test_schema_rejects_what_the_loader_rejects(
    case: str, data: dict[str, Any], where: str, validator: jsonschema.protocols.Validator, full_host: PluginHost
) -> None:
    """A wrong key (top level, in a step's options), a wrong type or value fails both, at the same place."""
    assert _loads(BASE, full_host) and not _errors(validator, BASE)
    assert not _loads(data, full_host), case
    errors = list(validator.iter_errors(data))
    assert errors, case
    assert any("/".join(map(str, e.absolute_path)).startswith(where) for e in errors), [e.message for e in errors]


def test_interpolation_is_accepted_where_a_number_or_boolean_is_expected(validator: jsonschema.protocols.Validator) -> None:
    """``${VAR:-default}`` is valid for typed fields (known only at load time); a plain word is not."""
    assert not _errors(validator, _with(("model", "context_window"), "${CTX_WINDOW:-8000}"))
    assert not _errors(validator, _with(("providers", 1, "enabled"), "${CTX_HISTORY:-true}"))
    assert _errors(validator, _with(("model", "context_window"), "eight thousand"))


def test_quoted_numbers_load_but_the_schema_asks_for_numbers(validator: jsonschema.protocols.Validator, full_host: PluginHost) -> None:
    """The one intended difference: the loader coerces "8000" (pydantic lax mode, needed for ``${VAR}``);
    the schema asks for a YAML number so editors flag the quotes."""
    data = _with(("model", "context_window"), "8000")
    assert _loads(data, full_host)
    assert _errors(validator, data)


# ------------------------------------------------------------- agreement
@functools.cache
def _bases() -> list[dict[str, Any]]:
    """The shipped pipelines (parsed once; callers copy before mutating)."""
    return [_interpolated(p) for p in PRESETS + EXAMPLES] + [copy.deepcopy(BASE)]


def _steps(data: dict[str, Any]) -> list[tuple[tuple[Any, ...], str]]:
    """(path, kind) of every step of ``data``."""
    out: list[tuple[tuple[Any, ...], str]] = []
    for slot, kind in _SLOTS.items():
        value = data.get(slot)
        if isinstance(value, list):
            out.extend(((slot, i), kind) for i in range(len(value)))
        elif value is not None:
            out.append(((slot,), kind))
    return out


_identifier = st.from_regex(r"[a-z][a-z_]{2,12}", fullmatch=True)
# Values outside pydantic's lax coercions (numeric strings, 0/1 for booleans, booleans for numbers),
# where the schema asks for the native type on purpose (see the test above).
_value = st.one_of(
    st.none(),
    st.integers(min_value=2, max_value=10**6),
    st.integers(max_value=-1),
    st.floats(min_value=-100, max_value=100, allow_nan=False).filter(lambda f: not float(f).is_integer()),
    st.from_regex(r"[a-z]{3,10}", fullmatch=True).filter(lambda s: s not in _BOOL_WORDS),
    st.lists(st.integers(min_value=2, max_value=9), max_size=2),
    st.dictionaries(_identifier, st.integers(min_value=2, max_value=9), max_size=1),
)


@st.composite
def mutated(draw: st.DrawFn) -> dict[str, Any]:
    """A shipped pipeline with one to three mutations: unknown keys, other component names, option values."""
    host = _HOST[0]
    data = draw(st.sampled_from(_bases()))
    data = copy.deepcopy(data)
    for _ in range(draw(st.integers(1, 3))):
        steps = _steps(data)
        kind_of_change = draw(st.sampled_from(["top_key", "step_key", "step_type", "option", "option_default"]))
        if kind_of_change == "top_key":
            data[draw(_identifier)] = draw(_value)
            continue
        path, kind = draw(st.sampled_from(steps))
        parent: Any = data
        for part in path[:-1]:
            parent = parent[part]
        step = parent[path[-1]]
        if isinstance(step, str):
            step = {"type": step}
            parent[path[-1]] = step
        if kind_of_change == "step_type":
            step["type"] = draw(st.sampled_from([*host.registry.names(kind), "nosuch"]))
            continue
        try:
            fields = host.registry.get(kind, step["type"]).config.model_fields
        except LookupError:
            continue
        if kind_of_change == "step_key":
            step[draw(_identifier)] = draw(_value)
        elif fields:
            name = draw(st.sampled_from(sorted(fields)))
            field = fields[name]
            key = field.alias or name
            if kind_of_change == "option":
                step[key] = draw(_value)
            elif not field.is_required() and field.default_factory is None:
                step[key] = field.default if not isinstance(field.default, (tuple, Path)) else json.loads(json.dumps(field.default, default=str))
    return data


_HOST: list[PluginHost] = []

# Rules the schema cannot express, left to the loader: a component's own checks across its fields.
_CROSS_FIELD = ("must not exceed", "either", "not both", "only used with", "must be smaller than", "exactly one of")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_schema_and_loader_agree_on_mutated_pipelines(
    data: st.DataObject, validator: jsonschema.protocols.Validator, full_host: PluginHost
) -> None:
    """Valid by the schema ⇔ ``Pipeline.from_dict`` loads it (outside cross-field rules)."""
    _HOST[:] = [full_host]
    pipeline = data.draw(mutated())
    by_schema = not _errors(validator, pipeline)
    try:
        Pipeline.from_dict(pipeline, host=full_host)
        loads, problems = True, []
    except ConfigError as exc:
        loads, problems = False, [i.message for i in exc.issues]
    if by_schema and not loads and all(any(m in p for m in _CROSS_FIELD) for p in problems):
        return  # a check the schema cannot express
    assert by_schema == loads, {"schema": _errors(validator, pipeline), "loader": problems, "pipeline": pipeline}


# ------------------------------------------------------------------- CLI
def test_cli_prints_the_schema(tmp_path: Path) -> None:
    """``ctx pipeline schema`` prints JSON that validates the shipped chat preset (real subprocess, installed plugins)."""
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("CTXCORE_")}
    out = subprocess.run([sys.executable, "-m", "ctxcore", "pipeline", "schema"], capture_output=True, text=True, env=env, check=True)
    schema = json.loads(out.stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    chat = yaml.safe_load((PRESETS[0].parent / "chat.yaml").read_text(encoding="utf-8"))
    assert not list(jsonschema.Draft202012Validator(schema).iter_errors(chat))
    assert list(jsonschema.Draft202012Validator(schema).iter_errors({**chat, "providerz": []}))


def test_memory_record_is_in_the_schema_and_agrees_with_the_loader(validator: jsonschema.protocols.Validator,
                                                                     full_host: PluginHost) -> None:
    """``memory: record:`` validates in the schema as in the loader; a misspelt key fails both; other steps have no record."""
    good = {"version": 1, "memory": {"type": "sqlite", "path": "m.db", "record": {"user_turns": True, "namespace": "p"}}}
    bad = {"version": 1, "memory": {"type": "sqlite", "record": {"user_turn": True}}}
    elsewhere = {"version": 1, "filters": [{"type": "token_budget", "record": {"user_turns": True}}]}
    assert _errors(validator, good) == [] and _loads(good, full_host)
    assert _errors(validator, bad) and not _loads(bad, full_host)
    assert _errors(validator, elsewhere) and not _loads(elsewhere, full_host)
