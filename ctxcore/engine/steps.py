"""The parts of a pipeline and of its result: :class:`Step`, :class:`BuiltContext`, message coercion, presets.

Invariant: a step's id is unique within its list (a repeated id gets ``#index``),
because reports, timings and per-step memos are keyed by it. Why here: these
are the builder's vocabulary, used by the pipeline layer and the integrations
without the build machinery.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxcore.engine.display import pretty, report_html, report_summary
from ctxcore.engine.report import BuildReport
from ctxcore.model.messages import Message
from ctxcore.render import to_anthropic, to_openai_responses
from ctxcore.render.caching import CachePlan
from ctxcore.render.request import anthropic_request, openai_responses_request
from ctxcore.render.target import TargetSpec

__all__ = ["BuiltContext", "Step", "coerce_messages", "register_preset_factories"]

# The preset constructors behind ContextBuilder.for_chat & co. They live in the pipeline
# layer (they compile shipped YAML pipelines), which registers them when it is imported
# (``import ctxcore`` does), so the engine never imports a layer above it.
_PRESET_FACTORIES: dict[str, Callable[..., Any]] = {}


def register_preset_factories(**factories: Callable[..., Any]) -> None:
    """Install the constructors behind :meth:`ContextBuilder.for_chat` and its siblings.

    Called once by :mod:`ctxcore.pipeline.presets`; keys are the classmethod names
    (``for_chat``, ``for_react``, ``for_skill``, ``resolve_for_llm``).
    """
    _PRESET_FACTORIES.update(factories)


def preset_factory(name: str) -> Callable[..., Any]:
    try:
        return _PRESET_FACTORIES[name]
    except KeyError:  # only when the engine is used without the package that owns it
        raise RuntimeError(f"ContextBuilder.{name} needs the pipeline layer: import ctxcore.pipeline.presets first") from None


@dataclass(frozen=True)
class Step:
    """A component placed in a pipeline: its id, the object, and whether failure is fatal."""

    id: str
    component: Any
    optional: bool = False


@dataclass(frozen=True)
class BuiltContext:
    """The result of a build: the messages to send, the tools sent with them, and the report explaining them.

    ``tools`` are the builder's tools plus the state's, as given (OpenAI function
    tools are the usual form); the renderers convert them per provider.
    """

    messages: tuple[Message, ...]
    report: BuildReport = field(repr=False)
    tools: tuple[Mapping[str, Any], ...] = ()
    #: the Anthropic ``cache_control`` breakpoints (``target.cache: auto``), or ``None``.
    cache: CachePlan | None = None
    #: the request rules of the build, whose request-level keys (context management,
    #: OpenAI prompt-cache settings) the renderers below add; ``None`` adds none.
    target: TargetSpec | None = field(default=None, repr=False)
    #: the runtime ``thread_id`` of the build (the default OpenAI ``prompt_cache_key``).
    thread: Any = None

    def to_openai(self) -> list[dict[str, Any]]:
        """The messages as OpenAI chat-completions dicts (send ``tools`` alongside as given)."""
        return [m.to_openai() for m in self.messages]

    def to_openai_responses(self) -> dict[str, Any]:
        """The OpenAI Responses API body: ``input`` items, ``tools`` when the build has any, and the target's request keys.

        With a target: ``prompt_cache_key`` (the target's or the thread id),
        ``prompt_cache_options``, ``context_management`` (server compaction) and
        ``prompt_cache_breakpoint`` marks for models that take them (docs/caching.md).
        """
        body = to_openai_responses(self.messages, self.tools)
        return openai_responses_request(body, self.target, self.thread) if self.target is not None else body

    def to_anthropic(self) -> dict[str, Any]:
        """The Anthropic Messages API body: ``system`` blocks, alternating ``messages``, and ``tools`` when any.

        With ``target.context_management`` edits the body also carries
        ``context_management`` and ``betas``: send it with ``client.beta.messages.create``.
        Changes made to the caller's own ``cache_control`` marks (left out
        beyond 4, raised to 1h) are added to the report's warnings.
        """
        notes: list[str] = []
        body = to_anthropic(self.messages, self.tools, self.cache, notes=notes)
        self.report.warnings.extend(n for n in notes if n not in self.report.warnings)
        return anthropic_request(body, self.target) if self.target is not None else body

    def _repr_html_(self) -> str:
        """Jupyter's display: the budget bar and one row per message, as a script-free HTML fragment."""
        return report_html(self.report)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """IPython's display: the summary line, then one line per message sent (at most 50)."""
        lines = [report_summary(self.report, len(self.messages))]
        lines += [f"[{k}] {r.role} {r.source or '?'} {r.tokens or 0} tok: {r.preview}" for k, r in
                  enumerate(self.report.kept[:50])]
        if len(self.messages) > 50:
            lines.append(f"... {len(self.messages) - 50} more")
        pretty(self, printer, cycle, lines)


def coerce_messages(items: Iterable[Message | Mapping[str, Any]]) -> list[Message]:
    """Accept :class:`Message` objects or OpenAI dicts; return messages.

    Raises:
        ValueError: an item is neither; the message names its index.
    """
    out: list[Message] = []
    for i, item in enumerate(items):
        if isinstance(item, Message):
            out.append(item)
        elif isinstance(item, Mapping):
            try:
                out.append(Message.from_openai(item))
            except (ValueError, TypeError, KeyError) as exc:
                raise ValueError(f"message {i}: {exc}") from exc
        else:
            raise ValueError(f"message {i}: expected a Message or a dict, got {type(item).__name__}")
    return out


def as_steps(items: Sequence[Any], kind: str) -> list[Step]:
    steps: list[Step] = []
    seen: set[str] = set()
    for i, item in enumerate(items):
        step = item if isinstance(item, Step) else Step(id=_default_id(item, kind, i), component=item)
        if step.id in seen:
            step = Step(id=f"{step.id}#{i}", component=step.component, optional=step.optional)
        seen.add(step.id)
        steps.append(step)
    return steps


def _default_id(component: Any, kind: str, index: int) -> str:
    """An explicit ``id`` attribute, else the class name in snake case (``StaticPrompt`` -> ``static_prompt``)."""
    name = getattr(component, "id", None)
    if isinstance(name, str) and name:
        return name
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", type(component).__name__).lower()
    return snake or f"{kind}s[{index}]"
