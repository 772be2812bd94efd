"""Plugin kit: the stable surface for plugin authors (checkpointers, memory stores, filters, providers).

Everything a plugin needs beyond :mod:`ctxcore`'s own ``__all__`` is exported
here under a pinned ``__all__`` (``tests/test_public_api.py`` fails when it
changes without the test): the base classes and checks that checkpointers and
memory stores build on, the lazy message views and prefix memos that fast
filters and providers use, prompt texts, redaction and the count cache. A
shipped plugin imports only from ``ctxcore``, ``ctxcore.kit`` and
``ctxcore.testing``; the modules behind these names may move, these names
stay.

May import: ``ctxcore.errors``, ``ctxcore.redaction`` and the model, render and
engine layers. Nothing here imports the plugin host, pipelines or the CLI.
"""

from __future__ import annotations

from ctxcore.engine.budget import (
    CachedCounter,
    CountCache,
    FilterContext,
    ModelBudget,
    count_key,
)
from ctxcore.engine.counting import MessageCounter
from ctxcore.engine.lazy import (
    LazyMessages,
    MessageChain,
    PrefixMemo,
    Snapshot,
    is_lazy,
)
from ctxcore.engine.protocols import (
    Checkpointer,
    Filter,
    MemoryStore,
    Provider,
    Summarizer,
    TokenCounter,
)
from ctxcore.engine.report import BuildReport, MessageRecord
from ctxcore.errors import (
    BudgetExceeded,
    CheckpointCorrupt,
    ComponentError,
    ConfigError,
    ConfigIssue,
    CtxError,
    InvalidHistory,
    MemoryCorrupt,
    StaleWrite,
    UnstorableState,
)
from ctxcore.kit.checkpoints import (
    AsyncCheckpointerMixin,
    EncodedCheckpoint,
    check_keep_last,
    check_step,
    check_thread_id,
    checkpoint_dict,
    decode_value,
    encode_checkpoint,
    encode_value,
    ensure_newer,
)
from ctxcore.kit.components import EmptyConfig
from ctxcore.kit.files import DEFAULT_MAX_BYTES, FileRefused, inside, read_capped, read_confined
from ctxcore.kit.markers import (
    CLOSE_MARKER,
    OPEN_MARKER,
    count_markers,
    has_marker,
    neutralize_markers,
    skeleton,
)
from ctxcore.kit.memory import (
    MAX_NAMESPACE_LENGTH,
    MemoryStoreBase,
    canonical_json,
    check_filters,
    check_limit,
    check_metadata,
    check_query,
    check_record,
    check_retrieve,
    format_memories,
    item_id,
    memory_text,
    new_memory_id,
    resolve_namespace,
    tokenize,
)
from ctxcore.kit.overflow import overflow_cause
from ctxcore.kit.prompts import (
    DEFAULT_PROMPTS,
    PipelineContext,
    current_pipeline_context,
    get_prompt,
    use_pipeline_context,
)
from ctxcore.kit.threadlog import (
    THREAD_LOG_FORMAT,
    StepRecord,
    ThreadSnapshot,
    ThreadStore,
    UnknownStep,
    check_expected,
    corrupt,
    encode_messages,
    encode_metadata,
    extend_view,
    fence,
    idle_cutoff,
    parse_age,
    snapshot_of_rows,
    step_time,
    unknown_step,
    view_of,
)
from ctxcore.model.memory_item import DEFAULT_NAMESPACE, MemoryItem, utc_now
from ctxcore.model.messages import (
    ContentBlock,
    FileBlock,
    ImageBlock,
    Message,
    Role,
    TextBlock,
    ToolCall,
    content_to_openai,
)
from ctxcore.model.plain import plain_fields, plain_message
from ctxcore.model.structure import StructureItem, structure_of
from ctxcore.model.transactions import (
    Unit,
    check_tool_pairing,
    group_units,
    pinned_prefix_length,
)
from ctxcore.redaction import DEFAULT_REDACTOR, REDACTED, Redactor, redact, redact_preview, redact_text

__all__ = [
    "THREAD_LOG_FORMAT",
    "StepRecord",
    "ThreadSnapshot",
    "ThreadStore",
    "UnknownStep",
    "check_expected",
    "corrupt",
    "encode_messages",
    "encode_metadata",
    "extend_view",
    "fence",
    "idle_cutoff",
    "parse_age",
    "snapshot_of_rows",
    "step_time",
    "unknown_step",
    "view_of",
    "CLOSE_MARKER",
    "DEFAULT_MAX_BYTES",
    "OPEN_MARKER",
    "FileRefused",
    "count_markers",
    "has_marker",
    "inside",
    "neutralize_markers",
    "overflow_cause",
    "read_capped",
    "read_confined",
    "skeleton",
    "DEFAULT_NAMESPACE",
    "DEFAULT_PROMPTS",
    "DEFAULT_REDACTOR",
    "MAX_NAMESPACE_LENGTH",
    "REDACTED",
    "AsyncCheckpointerMixin",
    "BudgetExceeded",
    "BuildReport",
    "CachedCounter",
    "CheckpointCorrupt",
    "Checkpointer",
    "ComponentError",
    "ConfigError",
    "ConfigIssue",
    "ContentBlock",
    "CountCache",
    "CtxError",
    "EmptyConfig",
    "EncodedCheckpoint",
    "FileBlock",
    "Filter",
    "FilterContext",
    "ImageBlock",
    "InvalidHistory",
    "LazyMessages",
    "MemoryCorrupt",
    "MemoryItem",
    "MemoryStore",
    "MemoryStoreBase",
    "Message",
    "MessageChain",
    "MessageCounter",
    "MessageRecord",
    "ModelBudget",
    "PipelineContext",
    "PrefixMemo",
    "Provider",
    "Redactor",
    "Role",
    "Snapshot",
    "StaleWrite",
    "Summarizer",
    "TextBlock",
    "TokenCounter",
    "ToolCall",
    "content_to_openai",
    "Unit",
    "UnstorableState",
    "canonical_json",
    "check_filters",
    "check_keep_last",
    "check_limit",
    "check_metadata",
    "check_query",
    "check_record",
    "check_retrieve",
    "check_step",
    "check_thread_id",
    "check_tool_pairing",
    "checkpoint_dict",
    "count_key",
    "current_pipeline_context",
    "decode_value",
    "encode_checkpoint",
    "encode_value",
    "ensure_newer",
    "format_memories",
    "get_prompt",
    "group_units",
    "is_lazy",
    "item_id",
    "memory_text",
    "new_memory_id",
    "pinned_prefix_length",
    "redact",
    "redact_preview",
    "redact_text",
    "resolve_namespace",
    "structure_of",
    "StructureItem",
    "plain_fields",
    "plain_message",
    "tokenize",
    "use_pipeline_context",
    "utc_now",
]
