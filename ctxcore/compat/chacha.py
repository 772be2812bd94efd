"""ChachaAgent's context manager: ``ContextManager``, ``ContextConfig``, ``ConversationState``, ``MessageEvent``.

``ContextManager.assemble`` builds the request with ctxcore's ``ContextBuilder``
(providers and counter from the registry): the protected blocks (system
prompt, static rules, user and project permanent memory, skills) as trusted
system messages in the protected zone, then the dynamic blocks (memory index,
session memory, hook-injected contexts), then the conversation. It returns an
:class:`AssembledContext` with the reference's ``meta.total_tokens``,
``meta.budget_per_request``, ``meta.utilization_ratio``,
``needs_compression`` and ``recommended_level`` (a
:class:`~ctxcore.engine.pressure.PressureLevel`); the ctxcore build report is
``ctx.report``.

Where ctxcore deliberately differs: the dynamic blocks (memory index, session
memory, additional contexts) are untrusted data, sent as user-role blocks,
never as system messages; ``recommended_level`` follows the reference's level
table (its worked flow's "0.94 -> TRIMMED" contradicts the table); files are
read by the native ``bootstrap_files`` provider (confined to the project and
``~/.chacha``). Compression itself is ctxcore's ``compaction`` filter; this
manager only assembles and measures, as the reference's does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxcore.compat._resolve import create
from ctxcore.engine.budget import ModelBudget
from ctxcore.engine.builder import BuiltContext, ContextBuilder
from ctxcore.engine.pressure import PressureLevel
from ctxcore.engine.report import BuildReport
from ctxcore.model.messages import Message, human, system

__all__ = ["AssembledContext", "AssembledMeta", "ContextConfig", "ContextManager", "ConversationState", "MemoryManager",
           "MessageEvent"]


@dataclass
class ContextConfig:
    """The window and when compression is due (``utilization > compression_trigger_ratio``)."""

    max_tokens: int = 1_048_576
    compression_trigger_ratio: float = 0.8
    enable_summarization: bool = True


@dataclass
class MessageEvent:
    """One conversation event: who produced it, its chat role and its content."""

    source: str
    role: str
    content: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class ConversationState:
    """The events of one session, oldest first."""

    session_id: str | None = None
    project_id: str | None = None
    events: list[MessageEvent] = field(default_factory=list)

    def add_event(self, event: MessageEvent) -> None:
        """Append one event."""
        self.events.append(event)

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The events as OpenAI chat dicts."""
        return [{"role": e.role, "content": e.content} for e in self.events]


@dataclass
class MemoryManager:
    """Where a project's memory files live (``CHACHA_MEMORY.md``, ``MEMORY.md`` under ``project_root``)."""

    project_root: str = "."


@dataclass
class AssembledMeta:
    """Measurements of an assembled context."""

    total_tokens: int
    budget_per_request: int
    utilization_ratio: float
    session_id: str | None = None


@dataclass
class AssembledContext:
    """What :meth:`ContextManager.assemble` returns: the built request and its measurements."""

    built: BuiltContext
    meta: AssembledMeta
    needs_compression: bool
    recommended_level: PressureLevel

    @property
    def messages(self) -> tuple[Message, ...]:
        """The assembled messages."""
        return self.built.messages

    @property
    def report(self) -> BuildReport:
        """ctxcore's build report."""
        return self.built.report


class _Blocks:
    """A provider returning fixed messages (made once, so ids and counts are stable across builds)."""

    def __init__(self, messages: Sequence[Message]) -> None:
        self.messages = list(messages)

    def get_messages(self, state: Mapping[str, Any], runtime: Mapping[str, Any]) -> list[Message]:
        return self.messages


def _protected(text: str | None) -> list[Message]:
    return [system(text)] if text else []


_LABELS = ("memory index", "session memory", "additional context")


def _dynamic(text: str | None, label: str) -> list[Message]:
    return [human(f"[{label}]\n{text}", trust="untrusted")] if text else []


def _is_block(content: str) -> bool:
    """Whether a user message is one of the manager's own data blocks (not conversation)."""
    return any(content.startswith(f"[{label}]\n") for label in _LABELS)


class ContextManager:
    """Assembles ChachaAgent's blocks into one request with ctxcore's builder."""

    def __init__(self, config: ContextConfig | None = None) -> None:
        self.config = config or ContextConfig()
        self._texts: dict[str, Any] = {}
        self._counter = create("counter", "approximate", {}, for_="ContextManager")
        self._history = create("provider", "history", {}, for_="ContextManager")

    # ------------------------------------------------------------------ setters
    def set_system_prompt(self, text: str) -> None:
        """The system prompt (protected)."""
        self._texts["system_prompt"] = text

    def set_static_rules(self, text: str) -> None:
        """CHACHA.md rules (protected)."""
        self._texts["static_rules"] = text

    def set_global_permanent_memory(self, text: str) -> None:
        """USER_MEMORY.md, the user's cross-project memory (protected)."""
        self._texts["global_memory"] = text

    def set_permanent_memory(self, text: str) -> None:
        """CHACHA_MEMORY.md, the project's permanent memory (protected)."""
        self._texts["permanent_memory"] = text

    def set_skills(self, skills: str | Sequence[Mapping[str, Any]]) -> None:
        """Skills or tool schemas (protected): a text block or JSON-schema tool definitions."""
        self._texts["skills"] = skills

    def set_memory_index(self, text: str) -> None:
        """MEMORY.md's light index (dynamic, untrusted)."""
        self._texts["memory_index"] = text

    def set_session_memory(self, text: str) -> None:
        """Today's session memory (dynamic, untrusted)."""
        self._texts["session_memory"] = text

    # ------------------------------------------------------------------ assemble
    def _skills(self, skills: Any) -> list[Message]:
        if not skills:
            return []
        options = {"text": skills} if isinstance(skills, str) else {"tools": [dict(t) for t in skills]}
        return list(create("provider", "tools_desc", options, for_="ContextManager.set_skills").get_messages({}, {}))

    def assemble(self, state: ConversationState, session_id: str | None = None, static_rules: str | None = None,
                 skills: Any = None, memory_content: str | None = None,
                 additional_contexts: Sequence[Any] | None = None) -> AssembledContext:
        """Build the request: protected blocks, dynamic blocks, then the conversation.

        Arguments other than ``state`` override what the setters injected
        (``None`` keeps it); ``memory_content`` replaces the project permanent memory.
        """
        t = self._texts
        protected = [
            *_protected(t.get("system_prompt")),
            *_protected(static_rules if static_rules is not None else t.get("static_rules")),
            *_protected(t.get("global_memory")),
            *_protected(memory_content if memory_content is not None else t.get("permanent_memory")),
            *self._skills(skills if skills is not None else t.get("skills")),
        ]
        dynamic = [*_dynamic(t.get("memory_index"), "memory index"), *_dynamic(t.get("session_memory"), "session memory")]
        for extra in additional_contexts or ():
            text = extra.get("content") if isinstance(extra, Mapping) else getattr(extra, "content", extra)
            dynamic += _dynamic(str(text), "additional context")
        builder = ContextBuilder([_Blocks(protected), _Blocks(dynamic), self._history], counter=self._counter,
                                 budget=ModelBudget(self.config.max_tokens))
        built = builder.build({"messages": state.messages})
        report = built.report
        budget = report.budget or self.config.max_tokens
        utilization = report.total_tokens / budget
        level = report.pressure_level or PressureLevel.NONE
        meta = AssembledMeta(report.total_tokens, budget, utilization, session_id or state.session_id)
        return AssembledContext(built, meta, utilization > self.config.compression_trigger_ratio, level)

    # ---------------------------------------------------------------- conversions
    @staticmethod
    def blocks_to_messages(ctx: AssembledContext) -> list[dict[str, Any]]:
        """The assembled context as OpenAI chat messages."""
        return ctx.built.to_openai()

    @staticmethod
    def messages_to_state(messages: Sequence[Mapping[str, Any]], session_id: str | None = None,
                          project_id: str | None = None) -> ConversationState:
        """OpenAI chat messages back into a state; the manager's system and data blocks are not conversation."""
        state = ConversationState(session_id=session_id, project_id=project_id)
        for m in messages:
            content = str(m.get("content") or "")
            if m.get("role") in ("user", "assistant") and not (m.get("role") == "user" and _is_block(content)):
                state.add_event(MessageEvent(source=str(m["role"]), role=str(m["role"]), content=content))
        return state

    @staticmethod
    def build_system_prompt(project_root: str, base_prompt: str = "", memory_manager: MemoryManager | None = None) -> str:
        """``base_prompt``, then ``~/.chacha/CHACHA.md``, the project's CHACHA.md, CHACHA_MEMORY.md and MEMORY.md.

        The files are read by the native ``bootstrap_files`` provider, confined
        to the project root (or ``memory_manager.project_root``) and
        ``~/.chacha``; missing files are skipped.
        """
        root = memory_manager.project_root if memory_manager is not None else project_root
        provider = create("provider", "bootstrap_files",
                          {"workspace": str(root), "user_dir": "~/.chacha", "trust": "trusted",
                           "files": ["CHACHA.md", "CHACHA_MEMORY.md", "MEMORY.md"]}, for_="ContextManager.build_system_prompt")
        parts = [base_prompt] if base_prompt else []
        parts += [m.text for m in provider.get_messages({}, {})]
        return "\n\n".join(parts)
