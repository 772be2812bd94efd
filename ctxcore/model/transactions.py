"""Tool-call units: the indivisible pieces filters keep or drop.

An assistant message that requests tool calls, together with the tool results
that answer it, is one unit; every other message is a unit of one. Providers
reject a tool result whose call is missing and (OpenAI) a call whose results are
missing, so filters work on units and never split one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ctxcore.errors import InvalidHistory
from ctxcore.model.blocks import provider_blocks
from ctxcore.model.messages import Message, ToolCall
from ctxcore.model.structure import structure_of

__all__ = [
    "Unit",
    "group_units",
    "check_tool_pairing",
    "pinned_prefix_length",
    "SanitizeResult",
    "open_calls_after",
    "sanitize_tool_call_history",
    "INTERRUPTED_RESULT",
    "LegalStart",
    "legal_start",
]


@dataclass(frozen=True, slots=True)
class Unit:
    """A contiguous run ``messages[start:end]`` that must be kept or dropped whole."""

    start: int
    end: int

    def __len__(self) -> int:
        return self.end - self.start

    def slice(self, messages: Sequence[Message]) -> Sequence[Message]:
        """Return the messages of this unit."""
        return messages[self.start:self.end]


def group_units(messages: Sequence[Message]) -> list[Unit]:
    """Split ``messages`` into units in one pass.

    Tool messages directly after an assistant message join its unit while they
    answer one of its calls (parallel calls may be answered in any order). A tool
    message that answers nothing open is a unit of its own (an orphan); legality
    checks decide what to do with it.
    """
    units: list[Unit] = []
    i, n = 0, len(messages)
    while i < n:
        m = messages[i]
        j = i + 1
        if m.role == "assistant" and m.has_tool_calls:
            pending = set(m.tool_call_ids)
            while j < n and pending and messages[j].role == "tool" and messages[j].tool_call_id in pending:
                pending.discard(messages[j].tool_call_id)
                j += 1
        units.append(Unit(i, j))
        i = j
    return units


def pinned_prefix_length(messages: Sequence[Message], pinned_roles: Sequence[str]) -> int:
    """Length of the leading run of messages whose role is in ``pinned_roles``.

    Budget filters always keep this prefix (the system prompt) and trim after it.
    """
    roles = set(pinned_roles)
    n = 0
    for m in messages:
        if m.role not in roles:
            break
        n += 1
    return n


def check_tool_pairing(messages: Sequence[Message]) -> None:
    """Raise :class:`InvalidHistory` unless every call is answered and every result has its call.

    Every tool result answers a call of the assistant message right before it
    (parallel results in any order), every call is answered before the next
    other message, and call ids are present and unique within a message. A
    request that breaks this rule is rejected by OpenAI and Anthropic alike, so
    the builder checks its output before returning it and
    :func:`ctxcore.render.validate_request` runs this same walk.
    """
    pending: dict[str, int] = {}
    for index, m in enumerate(messages):
        role = m.role  # read once: this walk runs over every request's output
        if role == "tool":
            if m.tool_call_id not in pending:
                raise InvalidHistory(
                    f"tool result for call {m.tool_call_id!r} does not answer a call of the assistant message before it",
                    index=index,
                )
            del pending[m.tool_call_id]
            continue
        if pending:
            call_id, at = next(iter(pending.items()))
            raise InvalidHistory(f"tool call {call_id!r} is not answered before message {index}", index=at)
        calls = m.tool_calls
        if calls and role == "assistant":
            ids = [c.id for c in calls]
            if "" in ids:
                raise InvalidHistory("a tool call has no id", index=index)
            if len(set(ids)) != len(ids):
                raise InvalidHistory("tool call ids repeat within one message", index=index)
            pending = dict.fromkeys(ids, index)
    if pending:
        call_id, at = next(iter(pending.items()))
        raise InvalidHistory(f"tool call {call_id!r} is never answered", index=at)


# --------------------------------------------------------------- sanitizing
#: text of the placeholder result backfilled for an interrupted call.
INTERRUPTED_RESULT = "[Tool call {name} was interrupted; no result was recorded.]"


@dataclass
class SanitizeResult:
    """What :func:`sanitize_tool_call_history` returned and why.

    Attributes:
        messages: the legal history.
        removed: messages taken out (broken past transactions, orphan results).
        backfilled: placeholder results added for interrupted calls.
        repaired: ids of assistant messages whose missing call ids were filled in.
        notes: one human-readable line per decision, for the build report.
    """

    messages: list[Message]
    removed: list[Message]
    backfilled: list[Message]
    repaired: list[str]
    notes: list[str]


def sanitize_tool_call_history(messages: Sequence[Message], *, backfill: bool = False) -> SanitizeResult:
    """Project ``messages`` onto a history every provider accepts.

    - A call without an id is given the id of the adjacent result when the
      pairing is unambiguous (exactly one id-less call and one unclaimed result,
      or every id-less call matched to one result by tool ``name``).
    - A broken transaction in the past (a call whose results never all come, a
      result whose call is not open right before it) is removed whole; with
      ``backfill`` a call's missing results are instead filled with a
      placeholder saying the call was interrupted (orphan results are always
      removed: there is no call to attach them to).
    - A broken **current tail** (the last unit) raises :class:`InvalidHistory`:
      the agent is mid-transaction and sending would be illegal.

    One pass plus one grouping, no token counting. Legal input comes back
    unchanged (the same objects, in the same list order).
    """
    if _is_legal(messages):  # the common case: one cheap pass, nothing allocated
        return SanitizeResult(list(messages), [], [], [], [])
    notes: list[str] = []
    repaired: list[str] = []
    fixed = _repair_call_ids(list(messages), repaired, notes)
    units = group_units(fixed)
    out: list[Message] = []
    removed: list[Message] = []
    added: list[Message] = []
    # The current tail is the last unit that is not a system message: providers
    # placed after the history (reminders, memory) do not make the turn "past".
    tail = next((k for k in range(len(units) - 1, -1, -1) if fixed[units[k].start].role != "system"), -1)
    for k, unit in enumerate(units):
        part = fixed[unit.start:unit.end]
        problem = _unit_problem(part)
        if problem is None:
            out.extend(part)
            continue
        if k == tail:
            raise InvalidHistory(
                f"the current turn is not a complete transaction: {problem}; run the pending tool "
                "calls and add their results (or remove the call) before building",
                index=unit.start,
            )
        if backfill and part[0].role == "assistant":
            fill = _placeholders(part)
            out.extend(part)
            out.extend(fill)
            added.extend(fill)
            notes.append(f"sanitize: message {unit.start}: {problem}; backfilled {len(fill)} placeholder result(s)")
        else:
            removed.extend(part)
            notes.append(f"sanitize: message {unit.start}: {problem}; removed {len(part)} message(s)")
    return SanitizeResult(out, removed, added, repaired, notes)


def _is_legal(messages: Sequence[Message]) -> bool:
    """True when every call is answered right after it and every result answers an open call."""
    return open_calls_after(messages) == frozenset()


def open_calls_after(messages: Sequence[Message], pending: frozenset[str] = frozenset()) -> frozenset[str] | None:
    """Walk ``messages`` for tool-call legality, starting with the calls ``pending``.

    Returns the calls still open at the end (empty when every call is answered),
    or ``None`` when the sequence is already illegal (a result answering no open
    call, a call left unanswered before another message, missing or duplicate
    call ids). Appending messages can never make an illegal prefix legal, so a
    caller may resume this walk after an unchanged prefix with its result.
    """
    open_: set[str] = set(pending)
    for m in messages:  # hot on a cold build: plain attribute reads, no per-message allocation
        if m.role == "tool":
            call_id = m.tool_call_id
            if call_id not in open_:
                return None
            open_.discard(call_id)
        elif open_:
            return None
        else:
            if m.has_tool_calls:  # the ids, not the calls: a structure item (StructureItem) need not hold ToolCalls
                calls = m.tool_call_ids
                open_ = set(calls)
                if len(open_) != len(calls) or "" in open_:
                    return None
    return frozenset(open_)


def _unit_problem(part: Sequence[Message]) -> str | None:
    """Why the unit ``part`` is not a legal transaction, or ``None``."""
    head = part[0]
    if head.role == "tool":
        return f"tool result for call {head.tool_call_id!r} has no open call before it"
    if head.role != "assistant" or not head.tool_calls:
        return None
    ids = head.tool_call_ids
    if len(set(ids)) != len(ids) or "" in ids:
        return "the assistant message has missing or duplicate tool call ids"
    answered = {m.tool_call_id for m in part[1:]}
    missing = [i for i in ids if i not in answered]
    if missing:
        return f"tool call {missing[0]!r} is never answered"
    return None


def _placeholders(part: Sequence[Message]) -> list[Message]:
    head = part[0]
    answered = {m.tool_call_id for m in part[1:]}
    out = []
    for call in head.tool_calls:
        if call.id in answered:
            continue
        digest = hashlib.blake2b(f"backfill\0{head.id}\0{call.id}".encode(), digest_size=16).hexdigest()
        out.append(
            Message(
                id=digest, role="tool", tool_call_id=call.id, content=INTERRUPTED_RESULT.format(name=call.name),
                source=head.source, priority=head.priority, metadata={"ctxcore": "backfill"},
            )
        )
    return out


def _repair_call_ids(messages: list[Message], repaired: list[str], notes: list[str]) -> list[Message]:
    """Fill empty call ids from the results right after the call, when unambiguous."""
    for i, m in enumerate(messages):
        if m.role != "assistant" or not any(not c.id for c in m.tool_calls):
            continue
        declared = {c.id for c in m.tool_calls if c.id}
        results = []
        j = i + 1
        while j < len(messages) and messages[j].role == "tool":
            if messages[j].tool_call_id not in declared:
                results.append(messages[j])
            j += 1
        blank = [c for c in m.tool_calls if not c.id]
        mapping = _pair_blank_calls(blank, results)
        if mapping is None:
            continue  # ambiguous: left broken, removed (or refused) below
        fill = iter(mapping)
        calls = tuple(c if c.id else c.model_copy(update={"id": next(fill)}) for c in m.tool_calls)
        messages[i] = m.model_copy(update={"tool_calls": calls})
        repaired.append(m.id)
        notes.append(f"sanitize: message {i}: repaired {len(blank)} missing tool call id(s) from the adjacent result(s)")
    return messages


def _pair_blank_calls(blank: Sequence[ToolCall], results: Sequence[Message]) -> list[str] | None:
    """Result ids for the id-less calls, in call order, or ``None`` when ambiguous."""
    if len(blank) != len(results) or not results:
        return None
    if len(blank) == 1:
        return [str(results[0].tool_call_id)]
    by_name: dict[str, str] = {}
    for r in results:
        if not r.name or r.name in by_name:
            return None
        by_name[r.name] = str(r.tool_call_id)
    names = [c.name for c in blank]
    if len(set(names)) != len(names) or any(n not in by_name for n in names):
        return None
    return [by_name[n] for n in names]


# -------------------------------------------------------------- legal start
@dataclass
class LegalStart:
    """The result of :func:`legal_start`: the messages, what was dropped, what was recovered."""

    messages: list[Message]
    dropped: list[Message]
    recovered: Message | None = None


def legal_start(
    window: Sequence[Message],
    *,
    history: Sequence[Message] | None = None,
    fits: Callable[[Message], bool] | None = None,
) -> LegalStart:
    """Make the first message after the system prefix a user message.

    When ``window`` (the kept messages) starts, after its system messages, with
    assistant or tool messages, the window advances to its first user message:
    the messages before it are dropped whole (a tool unit goes with its call,
    so a tool result never leads). With ``history`` (the sequence the window was
    cut from) the nearest earlier user message is recovered instead, at its
    original position, when ``fits(message)`` says it fits the budget.

    System messages are never dropped. A protected assistant or tool message
    before the first user message cannot be dropped and raises
    :class:`InvalidHistory`. A window with no user message keeps only its system
    messages. A window opening with an OpenAI Responses ``compaction`` item is
    legal as it is: the compaction stands for everything before it, and
    OpenAI's guide starts the next request there.
    """
    n = len(window)
    i = 0
    while i < n and window[i].role == "system":
        i += 1
    if i < n and any(b.api == "openai-responses" and b.is_compaction for b in provider_blocks(window[i].content)):
        return LegalStart(list(window), [])
    j = i
    while j < n and window[j].role != "user":
        j += 1
    if j == i:
        return LegalStart(list(window), [])
    if history is not None:
        recovered = _recover_user(window, i, history, fits)
        if recovered is not None:
            return recovered
    kept = list(window[:i])
    dropped: list[Message] = []
    for k in range(i, j):
        m = window[k]
        if m.role == "system":
            kept.append(m)
        elif m.zone == "protected":
            raise InvalidHistory(
                f"protected {m.role} message comes before the first user message and cannot be dropped "
                "to give the request a legal start; put a user message before it or make it a system message",
                index=k,
            )
        else:
            dropped.append(m)
    kept.extend(window[j:])
    return LegalStart(kept, dropped)


def _recover_user(
    window: Sequence[Message], first: int, history: Sequence[Message], fits: Callable[[Message], bool] | None
) -> LegalStart | None:
    """Put back the nearest user message before ``window[first]``, at its place in ``history``.

    Walks ``history`` back from its end (the window is its newest part), reading
    ids and roles from its structure, so a long history is not walked.
    """
    structure = structure_of(history)
    target = window[first].id
    later: set[str] = set()  # ids of history[k + 1:] while walking back
    at = None
    for k in range(len(structure) - 1, -1, -1):
        mid = structure[k].id
        if mid == target:
            at = k
            break
        later.add(mid)
    if at is None:
        return None
    later.add(target)
    in_window = {m.id for m in window}
    for k in range(at - 1, -1, -1):
        s = structure[k]
        if s.role == "user" and s.id not in in_window:
            m = history[k]
            if fits is not None and not fits(m):
                return None
            # The first window message placed after k in the history: everything seen walking back to k.
            insert = next((w for w, msg in enumerate(window) if msg.id in later), len(window))
            return LegalStart([*window[:insert], m, *window[insert:]], [], recovered=m)
        later.add(s.id)
    return None
