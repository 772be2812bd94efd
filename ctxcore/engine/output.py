"""The builder's steps after the filters: past repair, legal start, validation, counting — or their reuse.

Invariant: :meth:`OutputSteps._final_output` returns the messages and counts
the full steps (repair_past, legal_start, validate_request or the pairing
check, ``count_each``) give, whether or not the last output was reused. Why:
a next turn's output is mostly the last one's messages, each of which already
passed every step; :mod:`ctxcore.engine.reuse` proves which, so only the new
tail gets the per-message work. ``ContextBuilder(reuse=False)`` runs the full
steps every build.
"""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import structlog

from ctxcore.engine.budget import CachedCounter, ModelBudget
from ctxcore.engine.report import BuildReport
from ctxcore.engine.reuse import OutputMemo, Reused
from ctxcore.errors import InvalidHistory
from ctxcore.model.messages import Message
from ctxcore.model.transactions import check_tool_pairing, legal_start
from ctxcore.render import validate_request
from ctxcore.render.caching import CachePlan
from ctxcore.render.openai import check_openai_message
from ctxcore.render.repair import RepairCache, repair_past
from ctxcore.render.target import TargetSpec

__all__ = ["OutputSteps"]

log = structlog.get_logger("ctxcore.builder")


class OutputSteps:
    """The output half of :class:`~ctxcore.engine.builder.ContextBuilder` (a base class: it reads the builder's settings).

    Holds what the steps remember across builds: repair decisions by message,
    the messages that passed OpenAI's per-message rules, the last reusable
    output with its counts, and each thread's last cache fingerprints.
    """

    counter: CachedCounter
    budget: ModelBudget | None
    target: TargetSpec
    check_pairing: bool
    reuse: bool

    def _init_output_steps(self) -> None:
        self._repairs = RepairCache()  # past-message repair decisions, by message object
        # provider -> {id(message): message} of output messages that passed its per-message rules
        self._valid: dict[str, dict[int, Message]] = {}
        # the last output that every step after the filters left unchanged, with its counts (engine.reuse)
        self._output = OutputMemo()
        # thread id -> (system fingerprints, other fingerprints) of its last build, for cache breakpoints
        self._sent: OrderedDict[Any, tuple[tuple[str, ...], tuple[str, ...]]] = OrderedDict()

    def _final_output(
        self, output: list[Message], sanitized: Sequence[Message], tool_tokens: int, report: BuildReport,
    ) -> tuple[list[Message], list[int]]:
        """The filters' output after the steps that follow them, and each message's tokens."""
        key = self._reuse_key()
        reused = self._reuse_output(output, key) if key is not None else None
        if reused is not None:
            report.record_legal_start(reused.dropped, reused.messages)
            output = reused.messages
            tokens = reused.shared_counts + self.counter.count_each(output[reused.tail:])
            self.counter.hits += reused.tail  # as count_each would have answered them
            self._output.save(output, tokens, key)
            return output, tokens
        repaired = self._repair_past(output, report) if self.target.sanitize != "off" else output
        clean = len(repaired) == len(output) and all(map(operator.is_, repaired, output))
        output = repaired
        if self.target.legal_start:
            output, recovered = self._legal_start(output, sanitized, tool_tokens, report)
            clean = clean and not recovered
        tokens = self._validated_counts(output, report)
        if key is not None and clean:  # every past message sendable as it is: the next build may reuse it
            self._output.save(output, tokens, key)
        else:
            self._output.forget()
        return output, tokens

    def _repair_past(self, messages: list[Message], report: BuildReport) -> list[Message]:
        """Repair or drop past messages the target cannot take (decided once per message, see render.repair)."""
        result = repair_past(messages, self.target.provider, self._repairs)
        if result.dropped:
            report.record_dropped(result.dropped, by="sanitize")
        for note in result.notes:
            log.info("history_repaired", detail=note)
            report.notes.append(note)
        return result.messages

    def _legal_start(
        self, messages: list[Message], history: Sequence[Message], tool_tokens: int, report: BuildReport
    ) -> tuple[list[Message], bool]:
        """The output with a legal start, and whether an earlier user message was recovered into it."""
        budget = self.budget.max_input_tokens if self.budget else None

        def fits(m: Message) -> bool:  # only called when a recovery is possible
            if budget is None:
                return True
            used = self.counter.count_messages(messages) + tool_tokens
            return used + self.counter.count_message(m) <= budget

        result = legal_start(messages, history=history if self.target.recover_user else None, fits=fits)
        report.record_legal_start(result.dropped, result.messages, result.recovered)
        return result.messages, result.recovered is not None

    def _reuse_key(self) -> tuple[Any, ...] | None:
        """The settings an :class:`~ctxcore.engine.reuse.OutputMemo` holds for, or ``None`` when it cannot be used.

        The memo needs an output that passed the pairing walk: OpenAI validation
        or the plain pairing check (Anthropic's validation has rules across
        messages the memo does not track).
        """
        t = self.target
        if not self.reuse or (t.validate_request and t.provider != "openai"):
            return None
        if not t.validate_request and not self.check_pairing:
            return None
        return (t.provider, t.validate_request, t.sanitize, t.legal_start, t.recover_user)

    def _reuse_output(self, output: list[Message], key: tuple[Any, ...]) -> Reused | None:
        """The counts of the messages ``output`` shares with the last output, when only its new tail needed checks."""
        provider = self.target.provider
        valid = self._valid.setdefault(provider, {})
        validate = self.target.validate_request

        def check_new(m: Message, index: int) -> bool:
            if not validate or valid.get(id(m)) is m:
                return True
            try:
                check_openai_message(m, index)
            except InvalidHistory:
                return False  # the full steps raise it, with a fresh build's index and message
            valid[id(m)] = m
            return True

        repairs = self._repairs

        def repaired(m: Message) -> bool:
            fixed, reason = repairs.get(m, provider)
            return fixed is not m or reason is not None

        result = self._output.reuse(output, key, check_new, repaired if self.target.sanitize != "off" else None,
                                    self.target.legal_start, self.target.recover_user)
        if result is not None:
            repairs.forget_all_but(result.messages)
            if len(valid) > 2 * len(result.messages) + 1024:
                self._valid[provider] = {id(m): m for m in result.messages}
        return result

    def _validated_counts(self, messages: list[Message], report: BuildReport) -> list[int]:
        """Validate the output for the target (or check its pairing) and count each message."""
        if self.target.validate_request:
            self._validate(messages)  # includes the pairing check
        elif self.check_pairing:
            check_tool_pairing(messages)
        return self.counter.count_each(messages)

    def _validate(self, messages: list[Message]) -> None:
        """``validate_request`` on the output, OpenAI's per-message rules only for messages not validated before.

        The output holds ``Message`` objects only (filter outputs are checked),
        which are frozen, so a message that passed OpenAI's per-message rules in
        an earlier build passes them again; the pairing walk sees the whole
        output every build. Errors (and their order) are validate_request's.
        """
        provider = self.target.provider
        if provider != "openai":
            validate_request(messages, provider)
            return
        check_tool_pairing(messages)
        valid = self._valid.setdefault(provider, {}) if self.reuse else {}
        for index, m in enumerate(messages):
            if valid.get(id(m)) is not m:
                check_openai_message(m, index)
                valid[id(m)] = m
        if len(valid) > 2 * len(messages) + 1024:  # remember only what the last output holds
            self._valid[provider] = {id(m): m for m in messages}

    def _cache_plan(
        self, messages: list[Message], tokens: list[int], tool_tokens: int, has_tools: bool, thread: Any
    ) -> CachePlan | None:
        """Anthropic breakpoints for ``cache: auto``: one pass over the output's fingerprints (cached per message)."""
        target = self.target
        if target.provider != "anthropic" or target.cache == "off":
            return None
        system = tuple(m.fingerprint for m in messages if m.role == "system")
        rest = tuple(m.fingerprint for m in messages if m.role != "system")
        previous = self._sent.pop(thread, None)
        reused = 0
        if previous is not None and previous[0] == system:
            for a, b in zip(previous[1], rest, strict=False):
                if a != b:
                    break
                reused += 1
        self._sent[thread] = (system, rest)
        if len(self._sent) > 1024:  # remember the most recent threads only
            self._sent.popitem(last=False)
        extends = previous is not None and previous[0] == system and reused == len(previous[1])
        return target.cache_plan(messages, tokens, tool_tokens, has_tools, reused, extends)
