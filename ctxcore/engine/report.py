"""BuildReport: what each component added, dropped and cost, for every message.

The builder fills it while building. Token counts of kept messages are known
after the build; counts of dropped messages are computed the first time the
report is read (from the count cache when a filter already counted them), so a
build never pays to count what it throws away unless somebody asks.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ctxcore.engine.display import pretty, report_html, report_summary
from ctxcore.engine.lazy import structure_of
from ctxcore.engine.pressure import LEVEL_OF_STAGE, PressureLevel, recommended_level
from ctxcore.model.messages import Message
from ctxcore.model.transactions import group_units

if TYPE_CHECKING:  # pragma: no cover
    from ctxcore.engine.budget import CachedCounter

__all__ = ["Fate", "MessageRecord", "ComponentTiming", "Compression", "BuildReport"]

Fate = Literal["kept", "dropped", "added", "compressed"]


@dataclass
class MessageRecord:
    """The fate of one message.

    ``fate`` is ``kept`` (in the output, from a provider), ``added`` (in the output,
    introduced by a filter, e.g. a compression) or ``dropped`` (``by`` names the
    filter step). ``compressed`` means a filter replaced the message with a shorter
    one (``into`` names it, ``stage`` says how). ``position`` is the index in the
    output, ``None`` when dropped or compressed.
    """

    id: str
    role: str
    source: str | None
    zone: str
    trust: str
    fate: Fate
    tokens: int | None
    by: str | None = None
    position: int | None = None
    preview: str = ""
    stage: str | None = None
    into: str | None = None
    unit_start: bool = True  # False for a tool result dropped together with its call


@dataclass(frozen=True)
class Compression:
    """One reduction a filter made: ``original_ids`` became ``new_id`` at ``stage``.

    ``tokens_before`` counts the originals (for a tool result offloaded because
    it was over the filter's character cap, an estimate of characters / 4: it
    is never tokenized), ``tokens_after`` the replacement, so
    the report says what every reduction saved. Stage ``trim`` removes messages
    behind a marker: its originals keep the fate ``dropped``; every other stage
    marks them ``compressed``.
    """

    step_id: str
    stage: str
    original_ids: tuple[str, ...]
    new_id: str
    tokens_before: int
    tokens_after: int


@dataclass
class ComponentTiming:
    """Wall time one component took in this build, and what it did."""

    id: str
    kind: str
    seconds: float
    messages_in: int = 0
    messages_out: int = 0
    skipped: bool = False


@dataclass
class BuildReport:
    """Everything a build decided, per message and per component."""

    budget: int | None = None
    total_tokens: int = 0
    timings: list[ComponentTiming] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    cache_hits: int = 0  # count-cache hits during this build
    cache_misses: int = 0  # messages tokenized during this build
    compressions: list[Compression] = field(default_factory=list)
    tool_tokens: int = 0  # tool schemas sent with the request (part of total_tokens)
    notes: list[str] = field(default_factory=list)  # decisions worth reading (repairs, recoveries)
    _records: list[MessageRecord] = field(default_factory=list, repr=False)
    # The output as recorded (messages, counts, added ids or a function giving them): its
    # records are made on first read, so a build that nobody inspects pays nothing per message.
    _output: tuple[list[Message], list[int], set[str] | Callable[[], set[str]]] | None = field(default=None, repr=False)
    _dropped: list[tuple[list[Message], str] | _FilteredOut] = field(default_factory=list, repr=False)
    _counter: CachedCounter | None = field(default=None, repr=False)
    _cache_start: tuple[int, int] = field(default=(0, 0), repr=False)

    # ------------------------------------------------------------ recording
    def record_dropped(self, messages: list[Message], by: str) -> None:
        """Note that filter ``by`` removed ``messages`` (counted lazily).

        ``messages`` are in input order, so a dropped tool unit is contiguous
        here too: its results are marked as not starting a unit.
        """
        self._dropped.append((list(messages), by))

    def record_filtered(self, before: Sequence[Message], after: Sequence[Message], by: str) -> None:
        """Note that filter ``by`` turned ``before`` into ``after``; what it dropped is worked out when read.

        ``before`` must not change afterwards (a lazy sequence over a snapshot);
        ``after`` is copied by pointer (one C-level copy) and its ids are
        collected when the report is read, so a build pays no Python-level
        step per kept message, and nothing proportional to the history.
        """
        self._dropped.append(_FilteredOut(before, tuple(after), by))

    def filter_input(self, step_id: str) -> Sequence[Message] | None:
        """What filter ``step_id`` was given in this build (its latest run), or ``None`` if it has not run.

        Lets a later step see what an earlier one removed without the earlier
        one keeping it: ``recall`` reads the units ``token_budget`` evicted.
        """
        for entry in reversed(self._dropped):
            if isinstance(entry, _FilteredOut) and entry.by == step_id:
                return entry.before
        return None

    def record_legal_start(self, dropped: list[Message], kept: Sequence[Message], recovered: Message | None = None) -> None:
        """Note what legal_start dropped and the user message it recovered; warn when only system messages are left.

        Only system messages left means the newest turn did not open with a
        user message inside the budget (an agent's tool round whose results
        fill it): the request would go out without the user's question, so the
        report names the fix.
        """
        if dropped:
            self.record_dropped(dropped, by="legal_start")
            if all(m.role == "system" for m in kept):
                self.warnings.append(
                    f"legal_start dropped {len(dropped)} message(s) that did not open with a user message and the request "
                    "holds only system messages: the user's question did not fit the budget with the newest turn; set "
                    "target.recover_user: true (it keeps the question when it fits in front of that turn) or give the "
                    "model a larger budget"
                )
        if recovered is not None:
            self.record_recovered(recovered)
            text = " ".join(recovered.text.split())
            text = text if len(text) <= 60 else text[:59] + "…"
            self.notes.append(f"legal_start recovered the earlier user message {text!r} so the request starts with the user")

    def record_recovered(self, message: Message) -> None:
        """Forget one earlier drop of ``message``: a later step put it back.

        One drop only (the very object when it was dropped as itself, else the
        first with its id): two messages may share an id, and the other one
        stays dropped.
        """
        for entry in self._dropped:
            if isinstance(entry, _FilteredOut):
                entry.recovered.append(message)
        self._dropped = [
            entry if isinstance(entry, _FilteredOut) else (_without_one(entry[0], message), entry[1])
            for entry in self._dropped
        ]
        for k, r in enumerate(self._records):
            if r.fate == "dropped" and r.id == message.id:
                del self._records[k]
                break

    def record_compression(
        self,
        step_id: str,
        original_ids: list[str] | tuple[str, ...],
        new_message: Message,
        tokens_before: int,
        tokens_after: int,
        stage: str,
    ) -> None:
        """Note that filter ``step_id`` replaced ``original_ids`` with ``new_message`` at ``stage``."""
        self.compressions.append(
            Compression(step_id, stage, tuple(original_ids), new_message.id, tokens_before, tokens_after)
        )

    def record_output(self, messages: list[Message], tokens: list[int], added_ids: set[str] | Callable[[], set[str]]) -> None:
        """Record the final messages with their counts; ``added_ids`` (or a function giving them) came from filters.

        The records are made when the report is first read.
        """
        if len(messages) != len(tokens):
            raise ValueError(f"{len(messages)} messages but {len(tokens)} counts")
        self._output = (list(messages), list(tokens), added_ids)

    def _output_records(self) -> list[MessageRecord]:
        messages, tokens, added = self._output or ([], [], set())
        added_ids = added() if callable(added) else added
        return [
            MessageRecord(
                id=m.id, role=m.role, source=m.source, zone=m.zone, trust=m.trust,
                fate="added" if m.id in added_ids else "kept", tokens=t, position=position,
                preview=_preview(m),
            )
            for position, (m, t) in enumerate(zip(messages, tokens, strict=True))
        ]

    # -------------------------------------------------------------- reading
    @property
    def records(self) -> list[MessageRecord]:
        """A record for every output message then every dropped one."""
        if self._output is not None:
            self._records[:0] = self._output_records()
            self._output = None
        if self._dropped:
            counter = self._counter
            replaced = {i: c for c in self.compressions for i in c.original_ids}
            for entry in self._dropped:
                batch, by = entry.dropped() if isinstance(entry, _FilteredOut) else entry
                starts = {u.start for u in group_units(batch)}
                for k, m in enumerate(batch):
                    c = replaced.get(m.id)
                    # a message replaced alone was counted by the filter that replaced it: never tokenized twice
                    # (an offloaded 60 MB tool result is not tokenized at all)
                    if c is not None and len(c.original_ids) == 1:
                        tokens: int | None = c.tokens_before
                    else:
                        tokens = counter.count_message(m) if counter is not None else None
                    fate: Fate = "compressed" if c is not None and c.stage != "trim" else "dropped"
                    self._records.append(
                        MessageRecord(
                            id=m.id, role=m.role, source=m.source, zone=m.zone, trust=m.trust,
                            fate=fate, tokens=tokens, by=by, preview=_preview(m), unit_start=k in starts,
                            stage=c.stage if c else None, into=c.new_id if c else None,
                        )
                    )
            self._dropped = []
        return self._records

    @property
    def kept(self) -> list[MessageRecord]:
        """Records of the messages in the output, in output order."""
        return [r for r in self.records if r.position is not None]

    @property
    def dropped(self) -> list[MessageRecord]:
        """Records of the messages a filter removed."""
        return [r for r in self.records if r.fate == "dropped"]

    @property
    def compressed(self) -> list[MessageRecord]:
        """Records of the messages a filter replaced with a shorter message."""
        return [r for r in self.records if r.fate == "compressed"]

    @property
    def removed_count(self) -> int:
        """Input messages not in the output (dropped or compressed), read without counting their tokens."""
        pending = sum(entry.count() if isinstance(entry, _FilteredOut) else len(entry[0]) for entry in self._dropped)
        return pending + sum(1 for r in self._records if r.fate in ("dropped", "compressed"))

    @property
    def utilization(self) -> float | None:
        """Share of the budget the output uses, or ``None`` without a budget."""
        if not self.budget:
            return None
        return self.total_tokens / self.budget

    @property
    def pressure_level(self) -> PressureLevel | None:
        """The pressure this request was under: the deepest compaction level applied, or what its utilization calls for.

        ``max(recommended_level(utilization), level of each compression stage)``;
        ``None`` without a budget. See :mod:`ctxcore.engine.pressure`.
        """
        utilization = self.utilization
        if utilization is None:
            return None
        level = recommended_level(utilization)
        for c in self.compressions:
            applied = LEVEL_OF_STAGE.get(c.stage)
            if applied is not None and applied.rank > level.rank:
                level = applied
        return level

    def totals_by(self, key: Literal["source", "zone"]) -> dict[str, dict[str, int]]:
        """Per source (or zone): tokens and messages kept, dropped and compressed."""
        out: dict[str, dict[str, int]] = defaultdict(
            lambda: {"kept_tokens": 0, "dropped_tokens": 0, "compressed_tokens": 0, "kept": 0, "dropped": 0, "compressed": 0}
        )
        for r in self.records:
            bucket = out[str(getattr(r, key))]
            if r.fate in ("dropped", "compressed"):
                bucket[r.fate] += 1
                bucket[f"{r.fate}_tokens"] += r.tokens or 0
            else:
                bucket["kept"] += 1
                bucket["kept_tokens"] += r.tokens or 0
        return dict(sorted(out.items()))

    def _repr_html_(self) -> str:
        """Jupyter's display: the ``ctx report`` picture as a script-free HTML fragment (:mod:`ctxcore.engine.display`)."""
        return report_html(self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """IPython's display: the summary line and the warnings."""
        pretty(self, printer, cycle, [report_summary(self), *(f"warning: {w}" for w in self.warnings)])

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of the whole report."""
        return {
            "budget": self.budget,
            "total_tokens": self.total_tokens,
            "utilization": self.utilization,
            "tool_tokens": self.tool_tokens,
            "cache": {"hits": self.cache_hits, "misses": self.cache_misses},
            "messages": [asdict(r) for r in self.records],
            "by_source": self.totals_by("source"),
            "by_zone": self.totals_by("zone"),
            "compressions": [asdict(c) for c in self.compressions],
            "timings": [asdict(t) for t in self.timings],
            "warnings": list(self.warnings),
            "notes": list(self.notes),
        }


@dataclass
class _FilteredOut:
    """A filter's drops, recorded as its input and its output; what it dropped is worked out on first read.

    Messages are matched by id, as many times as each id is kept: two input
    messages may share an id (two ``Message`` objects given one id, a
    provider returning one text twice with a content-derived id), and when
    only one of them is kept the other is still reported dropped. Among
    messages sharing an id, the kept ones are those the output holds as the
    very objects, then the oldest (a filter that returned modified copies).
    """

    before: Sequence[Message]
    after: tuple[Message, ...]
    by: str
    recovered: list[Message] = field(default_factory=list)  # put back by a later step (record_recovered)

    def _kept(self) -> Counter[str]:
        """How many output messages (and recovered ones) carry each id."""
        kept = Counter(m.id for m in self.after)
        kept.update(m.id for m in self.recovered)
        return kept

    def count(self) -> int:
        """How many messages were dropped, in O(kept) when the input knows its ids (a lazy sequence) and none repeats."""
        kept = self._kept()
        has_id = getattr(self.before, "has_id", None)
        if has_id is None or any(n > 1 for n in kept.values()):
            return len(self._dropped_positions(kept))
        return len(self.before) - sum(1 for i in kept if has_id(i))

    def dropped(self) -> tuple[list[Message], str]:
        return [self.before[k] for k in self._dropped_positions(self._kept())], self.by

    def _dropped_positions(self, kept: Counter[str]) -> list[int]:
        """The input positions of the dropped messages, in order (reads only messages that share a kept id)."""
        structure = structure_of(self.before)
        shared: dict[str, list[int]] = {}  # kept id -> the input positions carrying it
        out: list[int] = []
        for k, m in enumerate(structure):
            if m.id in kept:
                shared.setdefault(m.id, []).append(k)
            else:
                out.append(k)
        for i, positions in shared.items():
            if len(positions) > kept[i]:  # one id on more input messages than the output keeps: some were dropped
                out.extend(self._surplus(positions, kept[i]))
        out.sort()
        return out

    def _surplus(self, positions: list[int], keep: int) -> list[int]:
        """Which of ``positions`` (input messages sharing one id) were dropped when ``keep`` of them are kept."""
        objects = {id(m) for m in self.after}
        objects.update(id(m) for m in self.recovered)
        same = {k for k in positions if id(self.before[k]) in objects}
        if len(same) > keep:  # an output holding one object twice keeps it once per copy: the newest first
            same = set(sorted(same)[len(same) - keep:])
        rest = [k for k in positions if k not in same]
        return rest[keep - len(same):]


def _without_one(messages: list[Message], message: Message) -> list[Message]:
    """``messages`` without ``message``: the very object if it is there, else the first with its id."""
    for k, m in enumerate(messages):
        if m is message:
            return messages[:k] + messages[k + 1:]
    for k, m in enumerate(messages):
        if m.id == message.id:
            return messages[:k] + messages[k + 1:]
    return messages


def _preview(m: Message, width: int = 60) -> str:
    text = m.text
    if not text and m.tool_calls:
        text = "→ " + ", ".join(f"{c.name}()" for c in m.tool_calls)
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"
