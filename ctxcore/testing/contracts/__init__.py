"""Conformance suites plugin authors subclass, one per component kind (like langchain-tests).

Subclass a contract in a test module, name the subclass ``Test...`` and give it
the factory method; pytest collects every check. A subclass may add tests but
not silently replace one: redefining a contract test fails at class creation
unless the new definition is marked ``@pytest.mark.xfail(reason=...)``.

Needs pytest (the ``test`` extra). Servers and harnesses that tests run
against live apart, in :mod:`ctxcore.testing.harness`.

May import: what :mod:`ctxcore.testing` may (every layer but tools and cli),
never the harnesses.
"""

from __future__ import annotations

from ctxcore.testing.contracts.base import Contract
from ctxcore.testing.contracts.budget_filter import (
    BudgetFilterContract,
    protected_histories,
)
from ctxcore.testing.contracts.checkpointer import (
    CheckpointerContract,
    json_values,
    same_json,
)
from ctxcore.testing.contracts.components import (
    FilterContract,
    ProviderContract,
    sample_histories,
)
from ctxcore.testing.contracts.counter import (
    SAMPLE_TEXTS,
    CounterContract,
    png_data_url,
)
from ctxcore.testing.contracts.memory_store import MemoryStoreContract
from ctxcore.testing.contracts.thread_store import ThreadStoreContract, sample_message

__all__ = [
    "SAMPLE_TEXTS",
    "BudgetFilterContract",
    "Contract",
    "CheckpointerContract",
    "CounterContract",
    "FilterContract",
    "MemoryStoreContract",
    "ProviderContract",
    "ThreadStoreContract",
    "json_values",
    "png_data_url",
    "protected_histories",
    "same_json",
    "sample_histories",
    "sample_message",
]
