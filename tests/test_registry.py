"""Tests for ctxcore.plugins.registry: lookups, suggestions and config models."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ValidationError

from ctxcore.plugins.registry import ComponentConflict, Registry, UnknownComponent


class Loose(BaseModel):
    """A config model that would ignore unknown keys on its own."""

    size: int = 1


def test_unknown_name_suggests_close_ones() -> None:
    """A typo names the closest registered component."""
    r = Registry()
    r.add("filter", "token_budget", lambda c: None, plugin="p")
    r.add("filter", "max_messages", lambda c: None, plugin="p")
    with pytest.raises(UnknownComponent, match="did you mean 'token_budget'"):
        r.get("filter", "tokn_budget")


def test_config_models_forbid_extra_keys() -> None:
    """Even a permissive config model rejects unknown keys once registered."""
    r = Registry()
    comp = r.add("provider", "p", lambda c: c.size, plugin="x", config=Loose)
    assert comp.create({"size": 2}) == 2
    with pytest.raises(ValidationError, match="sise"):
        comp.create({"sise": 2})


def test_description_defaults_to_factory_docstring() -> None:
    """Without a description, the factory's first docstring line is used."""

    def factory(config):
        """Make a thing.

        More words.
        """

    assert Registry().add("filter", "f", factory, plugin="x").description == "Make a thing."


@pytest.mark.parametrize(
    "kind, name, factory, config, error",
    [
        ("widget", "n", lambda c: None, None, ValueError),
        ("filter", "a:b", lambda c: None, None, ValueError),
        ("filter", "", lambda c: None, None, ValueError),
        ("filter", "n", "not callable", None, TypeError),
        ("filter", "n", lambda c: None, dict, TypeError),
    ],
)
def test_bad_registrations_are_rejected(kind, name, factory, config, error) -> None:
    """Registration validates kind, name, factory and config model."""
    with pytest.raises(error):
        Registry().add(kind, name, factory, plugin="x", config=config)


def test_conflicts_listed_and_qualified_lookup() -> None:
    """Conflicts are kept (not overwritten) and resolved by plugin prefix."""
    r = Registry()
    r.add("counter", "c", lambda c: 1, plugin="alpha")
    r.add("counter", "c", lambda c: 2, plugin="beta")
    assert r.conflicts() == [("counter", "c", ["alpha", "beta"])]
    with pytest.raises(ComponentConflict):
        r.get("counter", "c")
    assert r.get("counter", "beta:c").create() == 2
    with pytest.raises(UnknownComponent):
        r.get("counter", "gamma:c")


def test_lookup_errors_are_ctx_errors_and_lookup_errors() -> None:
    """``except CtxError`` catches a failed lookup, and so does existing ``except LookupError`` code."""
    from ctxcore import CtxError, PluginError

    r = Registry()
    r.add("filter", "trim", lambda c: None, plugin="a")
    r.add("filter", "trim", lambda c: None, plugin="b")
    with pytest.raises(CtxError):
        r.get("filter", "missing")
    with pytest.raises(LookupError):
        r.get("filter", "missing")
    with pytest.raises(PluginError, match="'a:trim' or 'b:trim'"):
        r.get("filter", "trim")
    assert issubclass(ComponentConflict, LookupError)


def test_every_error_lives_in_errors_and_is_exported() -> None:
    """The errors other modules raise are the classes of ``ctxcore.errors``, exported from ``ctxcore``."""
    import ctxcore
    import ctxcore.errors as errors
    from ctxcore.kit import checkpoints
    from ctxcore.plugins import registry
    from ctxcore.tools import replay, scaffold

    pairs = [(registry.UnknownComponent, "UnknownComponent"), (registry.ComponentConflict, "ComponentConflict"),
             (checkpoints.UnstorableState, "UnstorableState"), (replay.TranscriptError, "TranscriptError"),
             (scaffold.ScaffoldError, "ScaffoldError")]
    for cls, name in pairs:
        assert cls is getattr(errors, name) is getattr(ctxcore, name)
        assert cls.__module__ == "ctxcore.errors"
        assert issubclass(cls, errors.CtxError)
