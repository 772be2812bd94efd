"""The contract suites in ctxcore.testing catch broken components (they can fail)."""

from __future__ import annotations

import pytest

from ctxcore.model.messages import human
from ctxcore.testing.contracts import FilterContract, ProviderContract


def run_check(contract: type, method: str, **attrs) -> None:
    instance = type("Probe", (contract,), attrs)()
    getattr(instance, method)()


class TestFilterContractCatches:
    def test_split_units(self) -> None:
        """Dropping tool results but keeping their calls fails the pairing check."""

        class DropResults:
            def apply(self, messages, ctx):
                return [m for m in messages if m.role != "tool"]

        with pytest.raises(pytest.fail.Exception, match="is not answered before message"):
            run_check(FilterContract, "test_never_splits_tool_units", make_filter=lambda self: DropResults())

    def test_reordering(self) -> None:
        """Reversing messages fails the subsequence check."""

        class Reverse:
            def apply(self, messages, ctx):
                return list(reversed(messages))

        with pytest.raises(AssertionError, match="not a subsequence"):
            run_check(FilterContract, "test_output_is_subsequence", make_filter=lambda self: Reverse())

    def test_mutating_input(self) -> None:
        """Clearing the caller's list fails the mutation check."""

        class Clear:
            def apply(self, messages, ctx):
                out = list(messages)
                messages.clear()
                return out

        with pytest.raises(AssertionError):
            run_check(FilterContract, "test_does_not_mutate_input", make_filter=lambda self: Clear())

    def test_dropping_system_prompt(self) -> None:
        """Dropping the pinned system prefix fails when the filter promises to keep it."""

        class NoSystem:
            def apply(self, messages, ctx):
                return [m for m in messages if m.role != "system"]

        with pytest.raises(AssertionError):
            run_check(FilterContract, "test_keeps_leading_system_messages", make_filter=lambda self: NoSystem())

    def test_not_idempotent(self) -> None:
        """A filter that keeps halving its input fails the idempotence check."""

        class Halve:
            def apply(self, messages, ctx):
                return list(messages)[len(messages) // 2:]

        with pytest.raises(AssertionError):
            run_check(FilterContract, "test_idempotent", make_filter=lambda self: Halve())


class TestProviderContractCatches:
    def test_nondeterministic(self) -> None:
        """A provider whose text changes between calls fails (it would break prompt caching)."""

        class Clock:
            calls = 0

            def get_messages(self, state, runtime):
                Clock.calls += 1
                return [human(f"call {Clock.calls}")]

        with pytest.raises(AssertionError):
            run_check(ProviderContract, "test_same_state_same_messages", make_provider=lambda self: Clock())

    def test_mutating_state(self) -> None:
        """A provider that writes into the state fails."""

        class Writer:
            def get_messages(self, state, runtime):
                state["messages"].append({"role": "user", "content": "injected"})
                return []

        with pytest.raises(AssertionError):
            run_check(ProviderContract, "test_does_not_mutate_state", make_provider=lambda self: Writer())

    def test_async_mismatch(self) -> None:
        """An async variant that disagrees with the sync one fails."""

        class Split:
            def get_messages(self, state, runtime):
                return [human("sync")]

            async def aget_messages(self, state, runtime):
                return [human("async")]

        with pytest.raises(AssertionError):
            run_check(ProviderContract, "test_async_matches_sync", make_provider=lambda self: Split())


class _Keep:
    """A filter that keeps every message (passes the filter contract)."""

    def apply(self, messages, ctx):
        return list(messages)


class TestContractsCannotBeSilentlyOverridden:
    def test_redefining_a_contract_check_fails_at_class_creation(self) -> None:
        """A subclass that replaces ``test_idempotent`` with ``pass`` is refused, naming the check and the fix."""
        with pytest.raises(TypeError, match=r"replaces the contract check FilterContract\.test_idempotent.*xfail\(reason="):

            class TestSilenced(FilterContract):
                def make_filter(self):
                    return _Keep()

                def test_idempotent(self) -> None:
                    pass

    def test_assigning_over_a_contract_check_fails(self) -> None:
        """Hiding a check by assigning ``None`` to its name is refused too."""
        with pytest.raises(TypeError, match="test_keeps_leading_system_messages"):

            class TestHidden(FilterContract):
                test_keeps_leading_system_messages = None

    def test_an_xfail_with_a_reason_is_the_accepted_override(self) -> None:
        """An override marked ``xfail(reason=...)`` is allowed: the suite reports it as an expected failure."""

        class TestDeclared(FilterContract):
            def make_filter(self):
                return _Keep()

            @pytest.mark.xfail(reason="the component rewrites ids on every pass", strict=True)
            def test_idempotent(self) -> None:
                raise AssertionError("not idempotent")

        assert TestDeclared.test_idempotent is not FilterContract.test_idempotent

    def test_an_xfail_without_a_reason_is_refused(self) -> None:
        """``xfail`` with an empty reason does not count as a declared expected failure."""
        with pytest.raises(TypeError, match="test_idempotent"):

            class TestNoReason(FilterContract):
                @pytest.mark.xfail(reason="")
                def test_idempotent(self) -> None:
                    pass

    def test_new_checks_and_grandchildren_are_checked_against_the_contract(self) -> None:
        """New test names are free; an intermediate class does not launder an override for its subclass."""

        class MyChecks(FilterContract):
            def make_filter(self):
                return _Keep()

            def test_my_own_behaviour(self) -> None:
                assert True

        with pytest.raises(TypeError, match="test_does_not_mutate_input"):

            class TestGrandchild(MyChecks):
                def test_does_not_mutate_input(self) -> None:
                    pass

    @pytest.mark.parametrize("name", ["ProviderContract", "FilterContract", "BudgetFilterContract", "CheckpointerContract",
                                      "CounterContract", "MemoryStoreContract"])
    def test_every_shipped_suite_is_guarded(self, name: str) -> None:
        """Every contract suite in ctxcore.testing.contracts derives from the guarded base."""
        import ctxcore.testing.contracts as contracts

        assert issubclass(getattr(contracts, name), contracts.Contract)
