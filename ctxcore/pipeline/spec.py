"""YAML pipelines: file -> PipelineSpec (pydantic) -> compiled ContextBuilder.

A pipeline names components by ``type``; each step's remaining keys are
validated by that component's config model. Every problem of a file is reported
at once, each with file:line:column, the YAML path and, for unknown names, the
closest registered names. See docs/pipeline.md for the reference.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path as FsPath
from typing import Any, Literal

import structlog
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PositiveInt,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ctxcore.engine.budget import ModelBudget
from ctxcore.engine.builder import BuiltContext, ContextBuilder, Step
from ctxcore.errors import ConfigError, ConfigIssue, FileRefused
from ctxcore.kit.files import read_capped
from ctxcore.kit.prompts import PipelineContext, PromptTexts, use_pipeline_context
from ctxcore.model.safe_yaml import MAX_DOCUMENT_BYTES, LoadedYaml, load_yaml
from ctxcore.plugins.host import PluginHost, default_host
from ctxcore.plugins.registry import Component, ComponentConflict, UnknownComponent
from ctxcore.render.target import TargetSpec

__all__ = ["MemoryRecordSpec", "ModelSpec", "StepSpec", "PipelineSpec", "Pipeline", "DEFAULT_COUNTER", "register_thread_factories"]

log = structlog.get_logger("ctxcore.pipeline")

#: counter used when a pipeline names none.
DEFAULT_COUNTER = "approximate"

_STEP_KEYS = ("type", "id", "optional", "enabled")

# Pipeline.thread / athread open a runtime-layer Thread. The runtime layer (above this
# one) registers the openers when it is imported; ``import ctxcore`` loads nothing up
# front, so the first thread loads that layer by name: this module keeps no upward import.
_THREAD_FACTORIES: dict[str, Callable[..., Any]] = {}


def register_thread_factories(open_thread: Callable[..., Any], aopen_thread: Callable[..., Awaitable[Any]]) -> None:
    """Install the functions behind :meth:`Pipeline.thread` and :meth:`Pipeline.athread` (called by ``ctxcore.runtime.threads``)."""
    _THREAD_FACTORIES.update(sync=open_thread, async_=aopen_thread)


def _thread_factory(kind: str) -> Callable[..., Any]:
    if kind not in _THREAD_FACTORIES:
        importlib.import_module("ctxcore.runtime.threads")  # registers the openers
    return _THREAD_FACTORIES[kind]


class ModelSpec(BaseModel):
    """The target model's window; ``reserve_output_tokens`` stays free for the reply."""

    model_config = ConfigDict(extra="forbid")

    context_window: PositiveInt = 128_000
    reserve_output_tokens: int = Field(default=0, ge=0)
    safety_margin: int = Field(default=0, ge=0)
    max_input_chars: int | None = Field(default=None, ge=0, description="Most characters of message text a request may hold.")
    max_schema_chars: int | None = Field(default=None, ge=0, description="Most characters of tool schemas (compact JSON).")

    @model_validator(mode="after")
    def _reserve_fits(self) -> ModelSpec:
        if self.reserve_output_tokens + self.safety_margin >= self.context_window:
            raise ValueError(
                f"reserve_output_tokens ({self.reserve_output_tokens}) plus safety_margin ({self.safety_margin}) "
                f"must be smaller than context_window ({self.context_window}), or nothing is left for the input"
            )
        return self


class MemoryRecordSpec(BaseModel):
    """``memory: record:``: what a thread records into the pipeline's memory store when it saves a turn.

    Off unless a kind is switched on; see docs/memory.md ("A thread that records").
    """

    model_config = ConfigDict(extra="forbid")

    user_turns: bool = Field(default=False, description="Record each user message the thread saves.")
    tool_results: bool = Field(default=False, description="Record each tool result the thread saves.")
    summaries: bool = Field(default=False, description="Record each summary a compaction step made in the turn's builds.")
    namespace: str | None = Field(default=None, description="Memory namespace to record into (default: the store's 'default').")
    max_chars: int = Field(default=2000, ge=1, description="Most characters of one memory; longer text is cut.")
    ids: bool = Field(default=True, description="Record with ids derived from the messages (false for stores that assign ids, such as mem0).")


class StepSpec(BaseModel):
    """One component in a pipeline: ``type`` plus its own options (and, for ``memory:`` only, ``record``)."""

    model_config = ConfigDict(extra="forbid")

    type: str = Field(min_length=1)
    id: str | None = None
    optional: bool = False
    enabled: bool = True
    options: dict[str, Any] = Field(default_factory=dict)
    record: MemoryRecordSpec | None = None

    @classmethod
    def from_raw(cls, raw: Any, keys: tuple[str, ...] = _STEP_KEYS) -> Any:
        """Accept ``"name"`` or ``{type: name, id:, optional:, **options}``; ``keys`` are the step's own keys."""
        if isinstance(raw, str):
            return {"type": raw}
        if isinstance(raw, Mapping):
            return {
                **{k: raw[k] for k in keys if k in raw},
                "options": {k: v for k, v in raw.items() if k not in keys},
            }
        return raw


class PipelineSpec(BaseModel):
    """A whole pipeline file, validated (component options are checked at compile)."""

    model_config = ConfigDict(extra="forbid")

    version: Literal[1]
    name: str = "pipeline"
    description: str | None = None
    model: ModelSpec = Field(default_factory=ModelSpec)
    target: TargetSpec = Field(default_factory=TargetSpec)
    counter: StepSpec | None = None
    providers: list[StepSpec] = Field(default_factory=list)
    filters: list[StepSpec] = Field(default_factory=list)
    checkpointer: StepSpec | None = None
    threads: StepSpec | None = None
    memory: StepSpec | None = None
    prompts: PromptTexts = Field(default_factory=PromptTexts)

    @field_validator("counter", "checkpointer", "threads", "memory", mode="before")
    @classmethod
    def _one_step(cls, raw: Any, info: ValidationInfo) -> Any:
        return None if raw is None else StepSpec.from_raw(raw, _keys_of(str(info.field_name)))

    @field_validator("providers", "filters", mode="before")
    @classmethod
    def _step_list(cls, raw: Any) -> Any:
        return [StepSpec.from_raw(r) for r in raw] if isinstance(raw, list) else raw


# Where each slot's steps live in the file and which kind they name.
_SLOTS: tuple[tuple[str, str, bool], ...] = (
    ("counter", "counter", False),
    ("providers", "provider", True),
    ("filters", "filter", True),
    ("checkpointer", "checkpointer", False),
    ("threads", "thread_store", False),
    ("memory", "memory", False),
)


@dataclass
class _ResolvedStep:
    path: tuple[Any, ...]
    spec: StepSpec
    component: Component
    config: BaseModel


class Pipeline:
    """A validated pipeline bound to the components of a plugin host.

    Construct with :meth:`from_yaml`, :meth:`from_string` or :meth:`from_dict`;
    all raise :class:`ConfigError` listing every problem found.
    """

    def __init__(self, spec: PipelineSpec, steps: dict[str, list[_ResolvedStep]], *, host: PluginHost, loaded: LoadedYaml) -> None:
        self.spec = spec
        self.host = host
        self.source = loaded.file
        self._steps = steps
        self._loaded = loaded  # positions, for locating errors found while compiling
        self._builder: ContextBuilder | None = None
        self._checkpointer: Any = None
        self._memory: Any = None
        self._thread_checkpointer: Any = None
        self._thread_store: Any = None
        #: optional components that could not be created (also in every build report).
        self.warnings: list[str] = []

    # ------------------------------------------------------------ loading
    @classmethod
    def from_yaml(cls, path: str | FsPath, *, host: PluginHost | None = None, env: Mapping[str, str] | None = None) -> Pipeline:
        """Load and validate a pipeline file."""
        path = FsPath(path)
        try:  # fstat before reading, at most the cap read, FIFOs and devices refused (docs/security.md)
            text = read_capped(str(path), max_bytes=MAX_DOCUMENT_BYTES, what="pipeline").decode("utf-8")
        except FileRefused as exc:
            raise ConfigError([ConfigIssue(f"cannot read pipeline file: {str(exc).removeprefix(f'{path}: ')}", file=str(path))]) from exc
        except UnicodeDecodeError as exc:
            raise ConfigError([ConfigIssue(f"the pipeline is not UTF-8 text (invalid byte at offset {exc.start})", file=str(path))]) from exc
        return cls.from_string(text, file=str(path), host=host, env=env)

    @classmethod
    def from_string(cls, text: str, *, file: str = "<string>", host: PluginHost | None = None, env: Mapping[str, str] | None = None) -> Pipeline:
        """Load and validate pipeline YAML text; ``file`` names it in errors."""
        loaded = load_yaml(text, file=file, env=env)
        if loaded.data is None:
            raise ConfigError(loaded.issues)
        return cls._validate(loaded, host or default_host())

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, host: PluginHost | None = None, source: str = "<dict>") -> Pipeline:
        """Validate a pipeline given as a dict (errors carry paths, not lines)."""
        return cls._validate(LoadedYaml(data=dict(data), file=source), host or default_host())

    @classmethod
    def _validate(cls, loaded: LoadedYaml, host: PluginHost) -> Pipeline:
        # Every phase runs even when an earlier one found problems, so a file's
        # problems are all reported at once.
        issues: list[ConfigIssue] = list(loaded.issues)
        data = loaded.data
        if not isinstance(data, Mapping):
            issues.append(loaded.issue((), "a pipeline file must be a mapping with 'version: 1' at the top"))
            raise ConfigError(issues)
        spec: PipelineSpec | None = None
        try:
            spec = PipelineSpec.model_validate(data)
        except ValidationError as exc:
            issues.extend(_pydantic_issues(exc, loaded, ()))
        steps: dict[str, list[_ResolvedStep]] = {}
        for slot, kind, many in _SLOTS:
            for path, step in _raw_steps(data, slot, many):
                resolved = _resolve_step(host, kind, step, path, loaded, issues)
                if resolved is not None:
                    steps.setdefault(slot, []).append(resolved)
        if spec is not None:
            _check_ids(spec, loaded, issues)
        if issues or spec is None:
            raise ConfigError(issues)
        # The step options as loaded (after ${VAR} interpolation); the log set-up redacts secrets in them.
        log.debug("pipeline_loaded", file=loaded.file, name=spec.name,
                  steps={slot: [{"type": r.spec.type, "id": r.spec.id, "options": r.spec.options} for r in rs] for slot, rs in steps.items()})
        return cls(spec, steps, host=host, loaded=loaded)

    # ------------------------------------------------------------ compiling
    @property
    def budget(self) -> ModelBudget:
        """The model budget the pipeline declares."""
        model = self.spec.model
        return ModelBudget(model.context_window, model.reserve_output_tokens, model.safety_margin,
                           max_input_chars=model.max_input_chars, max_schema_chars=model.max_schema_chars)

    def builder(self) -> ContextBuilder:
        """The compiled builder (created once; its count cache is reused by every build)."""
        if self._builder is None:
            self._builder = self._compile()
        return self._builder

    def _compile(self) -> ContextBuilder:
        issues: list[ConfigIssue] = []
        created: dict[str, list[Step]] = {}
        memory_spec = self.spec.memory
        context = PipelineContext(self.spec.prompts.overrides(), self.host.registry, lambda: self._memory,
                                  has_memory=memory_spec is not None and memory_spec.enabled,
                                  context_window=self.spec.model.context_window, target=self.spec.target)
        for slot, _kind, _many in _SLOTS:
            for r in self._steps.get(slot, []):
                if not r.spec.enabled:
                    continue
                try:
                    with use_pipeline_context(context):
                        obj = r.component.create(r.config)
                except Exception as exc:
                    message = f"{r.component.kind} {r.spec.type!r} could not be created: {type(exc).__name__}: {exc}"
                    issue = self._loaded.issue(r.path, message)
                    if r.spec.optional:
                        self.warnings.append(f"optional {issue} (skipped)")
                        log.warning("component_skipped", component=r.spec.id or r.spec.type, error=message)
                        continue
                    issues.append(issue)
                    continue
                step_id = r.spec.id or r.spec.type
                created.setdefault(slot, []).append(Step(step_id, obj, r.spec.optional))
        if issues:
            raise ConfigError(issues)
        def single(slot: str) -> Any:
            steps = created.get(slot)
            return steps[0].component if steps else None

        counter = single("counter")
        if counter is None:
            raise ConfigError([self._loaded.issue(("counter",), "the optional counter could not be created and a pipeline needs one")])
        self._checkpointer = single("checkpointer")
        self._thread_store = single("threads")
        self._memory = single("memory")
        return ContextBuilder(
            created.get("providers", []),
            created.get("filters", []),
            counter,
            budget=self.budget,
            target=self.spec.target,
            hooks=self.host.hook,
            warnings=self.warnings,
            name=self.spec.name,
        )

    @property
    def checkpointer(self) -> Any:
        """The configured checkpointer (compiles the pipeline on first access), or ``None``."""
        self.builder()
        return self._checkpointer

    @property
    def memory_record(self) -> MemoryRecordSpec | None:
        """``memory: record:``: what threads record into :attr:`memory` when they save, or ``None`` (the default: nothing)."""
        spec = self.spec.memory
        return spec.record if spec is not None and spec.enabled else None

    @property
    def memory(self) -> Any:
        """The configured long-term memory store (compiles on first access), or ``None``."""
        self.builder()
        return self._memory

    def thread_checkpointer(self) -> Any:
        """Where threads are saved: the configured checkpointer, else one in-memory ``memory`` checkpointer for this pipeline.

        Raises:
            ConfigError: no checkpointer is configured and no plugin provides ``memory``.
        """
        if self.checkpointer is not None:
            return self.checkpointer
        if self._thread_checkpointer is None:
            try:
                self._thread_checkpointer = self.host.registry.get("checkpointer", "memory").create()
            except UnknownComponent as exc:
                raise ConfigError([ConfigIssue(
                    f"threads need a checkpointer: the pipeline names none and no 'memory' checkpointer is installed ({exc}); "
                    "add `checkpointer: {type: sqlite, path: ...}` or install ctxcore-checkpointers", file=self.source)]) from exc
        return self._thread_checkpointer

    def thread_store(self) -> Any:
        """Where threads are saved: the ``threads:`` store; else the thread store of the ``checkpointer:``'s type
        with the same options (one file holds both); else an in-memory ``memory`` store for this pipeline.

        Raises:
            ConfigError: the checkpointer's plugin offers no thread store of that name, or none is installed.
        """
        self.builder()
        if self._thread_store is None:
            self._thread_store = self._derived_thread_store()
        return self._thread_store

    def _derived_thread_store(self) -> Any:
        resolved = self._steps.get("checkpointer", [])
        spec = resolved[0].spec if resolved and resolved[0].spec.enabled else None
        name, options = (spec.type, spec.options) if spec is not None else ("memory", {})
        try:
            component = self.host.registry.get("thread_store", name)
        except UnknownComponent as exc:
            where = (f"the checkpointer {name!r} offers no thread log" if spec is not None
                     else "threads need a thread store and no 'memory' thread store is installed")
            raise ConfigError([self._loaded.issue(("checkpointer",) if spec else (),
                f"{where} ({exc}); add `threads: {{type: sqlite, path: .ctx/threads.db}}` (docs/persistence.md)")]) from exc
        try:
            return component.create(options)
        except (ValidationError, OSError, ValueError) as exc:
            raise ConfigError([self._loaded.issue(("checkpointer",), f"thread store {name!r} could not be created from the "
                f"checkpointer's options: {exc}; add a `threads:` section (docs/persistence.md)")]) from exc

    def thread(self, thread_id: str, *, step: int | None = None, state_key: str = "messages",
               tools: Sequence[Mapping[str, Any]] = ()) -> Any:
        """The conversation ``thread_id`` as of its latest step (or ``step``), or a new empty thread.

        Returns a :class:`ctxcore.runtime.threads.Thread` (docs/threads.md).
        ``state_key`` is the state key the pipeline's history provider reads;
        ``tools`` are sent with every build of the thread. A thread opened at an
        older step can be read and forked, not saved (``StaleWrite``).
        """
        return _thread_factory("sync")(self, thread_id, step=step, state_key=state_key, tools=tools)

    async def athread(self, thread_id: str, *, step: int | None = None, state_key: str = "messages",
                      tools: Sequence[Mapping[str, Any]] = ()) -> Any:
        """Async form of :meth:`thread` (the log is read in a worker thread)."""
        return await _thread_factory("async_")(self, thread_id, step=step, state_key=state_key, tools=tools)

    def build(self, state: Mapping[str, Any] | None = None, runtime: Mapping[str, Any] | None = None) -> BuiltContext:
        """Compile (once) and build; see :meth:`ContextBuilder.build`."""
        return self.builder().build(state, runtime)

    async def abuild(self, state: Mapping[str, Any] | None = None, runtime: Mapping[str, Any] | None = None) -> BuiltContext:
        """Compile (once) and build asynchronously."""
        return await self.builder().abuild(state, runtime)


def _keys_of(slot: str) -> tuple[str, ...]:
    """The keys a step of ``slot`` keeps for itself (not its component's options): ``memory`` adds ``record``."""
    return _STEP_KEYS + ("record",) if slot == "memory" else _STEP_KEYS


def _raw_steps(data: Mapping[str, Any], slot: str, many: bool) -> list[tuple[tuple[Any, ...], StepSpec]]:
    """The well-formed steps of ``slot`` in the raw data (malformed ones are reported by the spec pass)."""
    raw = data.get(slot)
    if raw is None:
        raw = DEFAULT_COUNTER if slot == "counter" else None
    if raw is None:
        return []
    items: list[tuple[tuple[Any, ...], Any]]
    if many:
        items = [((slot, i), item) for i, item in enumerate(raw)] if isinstance(raw, list) else []
    else:
        items = [((slot,), raw)]
    out = []
    for path, item in items:
        try:
            out.append((path, StepSpec.model_validate(StepSpec.from_raw(item, _keys_of(slot)))))
        except ValidationError:
            continue
    return out


def _known_fields(loc: tuple[Any, ...]) -> list[str]:
    if len(loc) == 1:
        return list(PipelineSpec.model_fields)
    if len(loc) == 2 and loc[0] == "model":
        return list(ModelSpec.model_fields)
    if len(loc) == 2 and loc[0] == "prompts":
        return list(PromptTexts.model_fields)
    if len(loc) == 3 and loc[:2] == ("memory", "record"):
        return list(MemoryRecordSpec.model_fields)
    if len(loc) == 2 and loc[0] == "target":
        return [f.alias or name for name, f in TargetSpec.model_fields.items()]
    return []


def _resolve_step(
    host: PluginHost, kind: str, step: StepSpec, path: tuple[Any, ...], loaded: LoadedYaml, issues: list[ConfigIssue]
) -> _ResolvedStep | None:
    try:
        component = host.registry.get(kind, step.type)
    except UnknownComponent as exc:
        message = str(exc)
        if not host.registry.names(kind):
            message += f" (no installed plugin provides a {kind}; see `ctx plugins list`)"
        issues.append(loaded.issue(path + ("type",), message))
        return None
    except ComponentConflict as exc:
        issues.append(loaded.issue(path + ("type",), str(exc)))
        return None
    try:
        config = component.validate(step.options)
    except ValidationError as exc:
        issues.extend(_pydantic_issues(exc, loaded, path, component=f"{kind} {step.type!r}", fields=list(component.config.model_fields)))
        return None
    return _ResolvedStep(path, step, component, config)


def _check_ids(spec: PipelineSpec, loaded: LoadedYaml, issues: list[ConfigIssue]) -> None:
    for slot in ("providers", "filters"):
        seen: dict[str, int] = {}
        for i, step in enumerate(getattr(spec, slot)):
            if step.id is None:
                continue
            if step.id in seen:
                issues.append(loaded.issue((slot, i, "id"), f"duplicate id {step.id!r} (also {slot}[{seen[step.id]}])"))
            seen.setdefault(step.id, i)


def _pydantic_issues(
    exc: ValidationError, loaded: LoadedYaml, base: tuple[Any, ...], component: str | None = None, fields: list[str] | None = None
) -> list[ConfigIssue]:
    issues = []
    for err in exc.errors(include_url=False):
        loc = tuple(p for p in err["loc"] if p != "options")
        path = base + loc
        at_key = err["type"] == "extra_forbidden"
        message = err["msg"]
        if at_key:
            message = f"unknown key {loc[-1]!r}" + (f" for {component}" if component else "")
            allowed = fields if fields is not None else _known_fields(loc)
            close = difflib.get_close_matches(str(loc[-1]), allowed, n=1, cutoff=0.6)
            message += f" — did you mean {close[0]!r}?" if close else (f" (allowed: {', '.join(allowed)})" if allowed else "")
        elif component:
            message = f"{message} ({component})"
        if not at_key:
            message += loaded.quote_hint(path)
        issues.append(loaded.issue(path, message, at_key=at_key))
    return issues
