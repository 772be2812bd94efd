"""``Contract``: the base of every conformance suite; a subclass may add checks, never silently replace one.

A plugin's test class that redefined ``test_idempotent`` with ``pass`` used to
report green. Now defining a test method whose name a contract already
defines raises :class:`TypeError` when the class is created (so pytest
reports a collection error), unless the new definition is marked
``@pytest.mark.xfail(reason="...")`` with a non-empty reason, as
langchain-tests asks. The suites themselves (classes that set
``__contract__ = True`` in their body) may refine their parents' checks.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Contract"]


def _xfail_reason(value: Any) -> str:
    """The reason of an ``xfail`` mark on ``value`` ('' when there is none)."""
    for mark in getattr(value, "pytestmark", ()):
        if getattr(mark, "name", None) == "xfail":
            reason = mark.kwargs.get("reason", "")  # pytest takes the reason as a keyword only
            if isinstance(reason, str) and reason.strip():
                return reason
    return ""


class Contract:
    """Base class of the contract suites (``FilterContract``, ``CheckpointerContract``, ...)."""

    __contract__ = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("__contract__", False):
            return
        for name, value in cls.__dict__.items():
            if not name.startswith("test"):
                continue
            owner = next(
                (base for base in cls.__mro__[1:] if base.__dict__.get("__contract__", False) and name in base.__dict__),
                None,
            )
            if owner is not None and not _xfail_reason(value):
                raise TypeError(
                    f"{cls.__module__}.{cls.__qualname__}.{name} replaces the contract check "
                    f"{owner.__qualname__}.{name}; contract checks cannot be overridden. If your component "
                    f"cannot pass it, keep the check and mark the override "
                    f"@pytest.mark.xfail(reason='why it cannot pass'); add new checks under new names"
                )
