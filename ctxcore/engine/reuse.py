"""The next build's output checked from the last one's: per-message work only for what is new.

A next turn's output is usually the last output with a few messages evicted
from the front (after the pinned system prompt) and the new messages
appended. Everything the builder does to an output after the filters — the
filter output check, the past-message repair (:mod:`ctxcore.render.repair`),
the legal start, the pairing walk and OpenAI's per-message rules, the final
count — was already done for the messages the two outputs share, and gave the
same answer it would give now. This module finds what they share without a
Python loop over the kept messages:

- :func:`shared_runs` splits the new output into leading *runs* of the last
  one (the same objects, in order; C-level passes over pointers: ``id``,
  ``list.index``, ``operator.is_not``) and a new tail;
- :class:`OutputMemo` remembers the last output that needed no change after
  the filters (so every past message in it was decided sendable as it is and
  the whole of it passed the pairing walk) with its token counts, and answers
  :meth:`OutputMemo.reuse`: the new output's counts when the shared runs and
  the tail provably pass every step unchanged, else ``None`` (the builder then
  runs the full steps, which raise their usual errors).

Why the shared runs need no new check: a message's repair decision, validity
and count depend only on the message object (messages are immutable), except
that the last message is never repaired (so the last output's last message is
checked when it is no longer last) and duplicate tool results depend on their
neighbours (a duplicate fails the pairing walk, which every run and the tail
pass). A run that starts with a non-tool message walks exactly as it did in
the last output; the calls open at its end are read back from the last
output's messages just before the run's end (a short backward step over tool
results).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import compress, count, islice, repeat
from operator import is_, is_not

from ctxcore.errors import InvalidHistory
from ctxcore.model.messages import Message
from ctxcore.model.transactions import legal_start, open_calls_after
from ctxcore.render.repair import repeated_results

__all__ = ["OutputMemo", "Reused", "shared_runs"]

#: runs looked for before the rest counts as new (pinned prefix, window, and a spare).
MAX_RUNS = 4


def shared_runs(previous: list[Message], current: Sequence[Message], limit: int = MAX_RUNS) -> tuple[list[tuple[int, int]], int]:
    """Leading runs of ``current`` that are runs of ``previous`` (same objects, increasing order), and where the rest starts.

    Returns ``(runs, tail)``: ``runs`` as ``(start, end)`` slices of ``previous``
    whose concatenation is ``current[:tail]``. Each run costs C-level passes
    over pointers only (no message attribute is read, no list of ids is made):
    its start is found by an identity scan from where the last run ended (the
    usual next turn: at that very place, or a few evicted messages later).
    """
    if not previous or not current:
        return [], 0
    runs: list[tuple[int, int]] = []
    at, floor, n, p = 0, 0, len(current), len(previous)
    while at < n and len(runs) < limit:
        first = current[at]
        if floor < p and previous[floor] is first:
            j = floor
        else:
            j = next(compress(count(floor), map(is_, repeat(first), islice(previous, floor, None))), -1)
            if j < 0:
                break
        m = min(n - at, p - j)
        length = next(compress(count(), map(is_not, islice(current, at, at + m), islice(previous, j, j + m))), m)
        runs.append((j, j + length))
        at, floor = at + length, j + length
    return runs, at


def _open_after_runs(previous: list[Message], runs: list[tuple[int, int]]) -> frozenset[str] | None:
    """The calls still open after the shared runs (each a run of an output that passed the pairing walk).

    ``None`` when the runs cannot be joined as they are (no run; a run starts
    with a tool result, whose call is outside it; a run follows one that left
    calls open): the full walk decides.
    """
    pending: frozenset[str] | None = frozenset() if runs else None
    for a, b in runs:
        if pending or previous[a].role == "tool":
            return None
        pending = _open_calls_at(previous, b)
    return pending


def _open_calls_at(previous: list[Message], end: int) -> frozenset[str]:
    """Call ids still unanswered after ``previous[:end]`` (``previous`` passed the pairing walk as a whole)."""
    if end == len(previous):
        return frozenset()  # the whole output passed: nothing open at its end
    k = end - 1
    while previous[k].role == "tool":
        k -= 1
    m = previous[k]
    if m.role != "assistant" or not m.tool_calls:
        return frozenset()
    return frozenset(m.tool_call_ids).difference(previous[i].tool_call_id for i in range(k + 1, end))


class OutputMemo:
    """The last build's output (unchanged by every step after the filters) and its token counts.

    ``key`` is the builder's configuration the facts hold for (target,
    pairing check, character limit); a memo with another key is not used.
    """

    __slots__ = ("messages", "tokens", "key")

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.tokens: list[int] = []
        self.key: object = None

    def save(self, messages: list[Message], tokens: list[int], key: object) -> None:
        """Remember an output that passed every step unchanged (the lists are not mutated afterwards)."""
        self.messages, self.tokens, self.key = messages, tokens, key

    def forget(self) -> None:
        self.messages, self.tokens, self.key = [], [], None

    def reuse(
        self,
        output: list[Message],
        key: object,
        check_new: Callable[[Message, int], bool],
        repaired: Callable[[Message], bool] | None,
        legal_start: bool,
        recover_user: bool = False,
    ) -> Reused | None:
        """The final output, its counts of shared messages and where its new tail starts — or ``None``.

        ``output`` is the filters' output. ``check_new(message, index)`` is true
        when a tail message passes the per-message rules; ``repaired(message)``
        is true when a past message would be changed or dropped by the repair
        step (``None``: no repair step). With ``legal_start`` the drop of
        :func:`~ctxcore.model.transactions.legal_start` is applied (its dropped
        messages must be sendable as they are: the repair step runs before it;
        with ``recover_user`` a drop is left to the full step). The tail's
        pairing is walked with :func:`~ctxcore.model.transactions.open_calls_after`
        from the calls the shared runs leave open. ``None`` means "run the full
        steps": they decide, and raise a fresh build's errors.
        """
        previous = self.messages
        if key != self.key or not previous:
            return None
        cut = _legal_cut(output, repaired, recover_user) if legal_start else (output, [])
        if cut is None:
            return None
        output, dropped = cut
        runs, tail = shared_runs(previous, output)
        pending = _open_after_runs(previous, runs)
        if pending is None or not self._tail_passes(output, runs, tail, pending, check_new, repaired):
            return None
        counts: list[int] = []
        for a, b in runs:
            counts.extend(self.tokens[a:b])
        return Reused(output, counts, tail, dropped)

    def _tail_passes(
        self, output: list[Message], runs: list[tuple[int, int]], tail: int, pending: frozenset[str],
        check_new: Callable[[Message, int], bool], repaired: Callable[[Message], bool] | None,
    ) -> bool:
        """Whether the new tail passes the per-message rules, the repair step and the pairing walk."""
        previous = self.messages
        if repaired is not None and runs[-1][1] == len(previous) and tail < len(output):
            if repaired(previous[-1]):  # the last output's current turn is now a past message
                return False
        end = len(output) - 1
        for index in range(tail, len(output)):
            m = output[index]
            if not check_new(m, index) or (repaired is not None and index != end and repaired(m)):
                return False
        return open_calls_after(output[tail:], pending) == frozenset()


@dataclass(frozen=True, slots=True)
class Reused:
    """What :meth:`OutputMemo.reuse` proved: the final output, the counts of ``messages[:tail]``, the legal-start drops."""

    messages: list[Message]
    shared_counts: list[int]
    tail: int
    dropped: list[Message]


def _legal_cut(
    output: list[Message], repaired: Callable[[Message], bool] | None, recover_user: bool,
) -> tuple[list[Message], list[Message]] | None:
    """:func:`~ctxcore.model.transactions.legal_start` on ``output`` and what it dropped, when that is all the full
    steps would do: nothing recovered, nothing raised, no dropped message the repair step would change."""
    try:
        result = legal_start(output)
    except InvalidHistory:
        return None  # the full step raises it, with a fresh build's index
    dropped = result.dropped
    if not dropped:
        return output, []
    if recover_user:
        return None
    if repaired is not None and (any(map(repaired, dropped)) or repeated_results(dropped)):
        return None
    return result.messages, dropped
