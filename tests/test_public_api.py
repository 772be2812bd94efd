"""The public surfaces are pinned (langchain's EXPECTED_ALL style): a change to them is a deliberate edit here.

``ctxcore.__all__`` is the user's surface, ``ctxcore.kit.__all__`` the plugin
author's, ``ctxcore.testing.contracts.__all__`` the contract suites,
``ctxcore.compat.__all__`` the reference systems' names (docs/porting.md). Every name
must resolve, and the names ``ctxcore.__all__`` had before the layered
redesign must all still be importable from ``ctxcore``.
"""

from __future__ import annotations

import importlib

import pytest

EXPECTED_CTXCORE_ALL = [
    "BudgetExceeded",
    "BuildReport",
    "BuiltContext",
    "CachedCounter",
    "CheckpointCorrupt",
    "Checkpointer",
    "Component",
    "ComponentConflict",
    "ComponentError",
    "ConfigError",
    "ConfigIssue",
    "ContentBlock",
    "ContextBuilder",
    "CountCache",
    "CtxError",
    "FileBlock",
    "Filter",
    "FilterContext",
    "ImageBlock",
    "InvalidHistory",
    "LegalStart",
    "MemoryCorrupt",
    "MemoryItem",
    "MemoryService",
    "MemoryStore",
    "Message",
    "MessageCounter",
    "MessageRecord",
    "ModelBudget",
    "Pipeline",
    "PipelineSpec",
    "PluginError",
    "PluginHost",
    "PluginInfo",
    "PressureLevel",
    "PromptRuntimeContext",
    "Provider",
    "Registry",
    "SanitizeResult",
    "ScaffoldError",
    "StaleWrite",
    "StateMessageStore",
    "Step",
    "Summarizer",
    "TargetSpec",
    "TextBlock",
    "Thread",
    "TokenCounter",
    "ToolCall",
    "TranscriptError",
    "Unit",
    "UnknownComponent",
    "UnstorableState",
    "__version__",
    "ai",
    "check_tool_pairing",
    "create_memory_tools",
    "group_units",
    "hookimpl",
    "human",
    "legal_start",
    "messages_from_anthropic",
    "messages_from_responses",
    "recommended_level",
    "reference_build",
    "sanitize_tool_call_history",
    "system",
    "to_anthropic",
    "to_openai",
    "to_openai_responses",
    "tool",
    "validate_request",
]

EXPECTED_KIT_ALL = [
    "AsyncCheckpointerMixin",
    "BudgetExceeded",
    "BuildReport",
    "CLOSE_MARKER",
    "CachedCounter",
    "CheckpointCorrupt",
    "Checkpointer",
    "ComponentError",
    "ConfigError",
    "ConfigIssue",
    "ContentBlock",
    "CountCache",
    "CtxError",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_NAMESPACE",
    "DEFAULT_PROMPTS",
    "DEFAULT_REDACTOR",
    "EmptyConfig",
    "EncodedCheckpoint",
    "FileBlock",
    "FileRefused",
    "Filter",
    "FilterContext",
    "ImageBlock",
    "InvalidHistory",
    "LazyMessages",
    "MAX_NAMESPACE_LENGTH",
    "MemoryCorrupt",
    "MemoryItem",
    "MemoryStore",
    "MemoryStoreBase",
    "Message",
    "MessageChain",
    "MessageCounter",
    "MessageRecord",
    "ModelBudget",
    "OPEN_MARKER",
    "PipelineContext",
    "PrefixMemo",
    "Provider",
    "REDACTED",
    "Redactor",
    "Role",
    "Snapshot",
    "StaleWrite",
    "StepRecord",
    "StructureItem",
    "Summarizer",
    "THREAD_LOG_FORMAT",
    "TextBlock",
    "ThreadSnapshot",
    "ThreadStore",
    "TokenCounter",
    "ToolCall",
    "Unit",
    "UnknownStep",
    "UnstorableState",
    "canonical_json",
    "check_expected",
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
    "content_to_openai",
    "corrupt",
    "count_key",
    "count_markers",
    "current_pipeline_context",
    "decode_value",
    "encode_checkpoint",
    "encode_messages",
    "encode_metadata",
    "encode_value",
    "ensure_newer",
    "extend_view",
    "fence",
    "format_memories",
    "get_prompt",
    "group_units",
    "has_marker",
    "idle_cutoff",
    "inside",
    "is_lazy",
    "item_id",
    "memory_text",
    "neutralize_markers",
    "new_memory_id",
    "overflow_cause",
    "parse_age",
    "pinned_prefix_length",
    "plain_fields",
    "plain_message",
    "read_capped",
    "read_confined",
    "redact",
    "redact_preview",
    "redact_text",
    "resolve_namespace",
    "skeleton",
    "snapshot_of_rows",
    "step_time",
    "structure_of",
    "tokenize",
    "unknown_step",
    "use_pipeline_context",
    "utc_now",
    "view_of",
]

EXPECTED_CONTRACTS_ALL = [
    "BudgetFilterContract",
    "CheckpointerContract",
    "Contract",
    "CounterContract",
    "FilterContract",
    "MemoryStoreContract",
    "ProviderContract",
    "SAMPLE_TEXTS",
    "ThreadStoreContract",
    "json_values",
    "png_data_url",
    "protected_histories",
    "same_json",
    "sample_histories",
    "sample_message",
]

EXPECTED_TESTING_ALL = [
    "fresh_host",
]

#: ``ctxcore.__all__`` before the redesign (main at 0e4082c): kept working for users.
PRE_REDESIGN_ALL = [
    "BudgetExceeded",
    "BuildReport",
    "BuiltContext",
    "CachedCounter",
    "CheckpointCorrupt",
    "Checkpointer",
    "Component",
    "ComponentError",
    "ConfigError",
    "ConfigIssue",
    "ContentBlock",
    "ContextBuilder",
    "CountCache",
    "CtxError",
    "FileBlock",
    "Filter",
    "FilterContext",
    "ImageBlock",
    "InvalidHistory",
    "LegalStart",
    "MemoryCorrupt",
    "MemoryItem",
    "MemoryService",
    "MemoryStore",
    "Message",
    "MessageCounter",
    "MessageRecord",
    "ModelBudget",
    "Pipeline",
    "PipelineSpec",
    "PluginError",
    "PluginHost",
    "PluginInfo",
    "PromptRuntimeContext",
    "Provider",
    "Registry",
    "SanitizeResult",
    "StaleWrite",
    "StateMessageStore",
    "Step",
    "Summarizer",
    "TargetSpec",
    "TextBlock",
    "TokenCounter",
    "ToolCall",
    "Unit",
    "__version__",
    "ai",
    "check_tool_pairing",
    "create_memory_tools",
    "group_units",
    "hookimpl",
    "human",
    "legal_start",
    "sanitize_tool_call_history",
    "system",
    "to_anthropic",
    "to_openai",
    "tool",
    "validate_request",
]

EXPECTED_COMPAT_ALL = [
    "AssembledContext",
    "BootstrapFilesProvider",
    "ContextConfig",
    "ContextFilter",
    "ContextManager",
    "ConversationState",
    "FileCheckpointer",
    "HFTokenCounter",
    "InMemoryCheckpointer",
    "MaxMessagesFilter",
    "Mem0LongTermMemory",
    "MemoryAddTool",
    "MemoryManager",
    "MemorySearchTool",
    "Message",
    "MessageEvent",
    "MessageProvider",
    "NullCheckpointer",
    "SimpleStore",
    "SimpleTokenCounter",
    "SkillSetPromptProvider",
    "StateHistoryProvider",
    "StaticPromptProvider",
    "TiktokenTokenCounter",
    "TokenBudgetFilter",
    "TokenCounterProtocol",
    "ToolsDescProvider",
    "ai",
    "create_memory_tools",
    "human",
    "system",
    "tool",
]

SURFACES = {
    "ctxcore.compat": EXPECTED_COMPAT_ALL,
    "ctxcore": EXPECTED_CTXCORE_ALL,
    "ctxcore.kit": EXPECTED_KIT_ALL,
    "ctxcore.testing.contracts": EXPECTED_CONTRACTS_ALL,
    "ctxcore.testing": EXPECTED_TESTING_ALL,
}


@pytest.mark.parametrize("module", sorted(SURFACES))
def test_all_is_pinned(module: str) -> None:
    """The module's ``__all__`` is exactly the pinned list (sorted comparison)."""
    assert sorted(importlib.import_module(module).__all__) == SURFACES[module]


@pytest.mark.parametrize("module", sorted(SURFACES))
def test_every_exported_name_resolves(module: str) -> None:
    """Each name of ``__all__`` is an attribute of the module, and none is listed twice."""
    mod = importlib.import_module(module)
    assert len(set(mod.__all__)) == len(mod.__all__)
    missing = [name for name in mod.__all__ if not hasattr(mod, name)]
    assert missing == []


def test_pre_redesign_names_still_import_from_ctxcore() -> None:
    """Every name users imported from ``ctxcore`` before the layered redesign still imports."""
    import ctxcore

    assert set(PRE_REDESIGN_ALL) <= set(ctxcore.__all__)
    for name in PRE_REDESIGN_ALL:
        assert getattr(ctxcore, name) is not None


def test_kit_names_are_the_objects_of_their_layers() -> None:
    """The kit re-exports, it does not copy: ``ctxcore.kit.X is`` the object the engine and model layers use."""
    import ctxcore
    import ctxcore.kit

    for name in set(EXPECTED_KIT_ALL) & set(EXPECTED_CTXCORE_ALL):
        assert getattr(ctxcore.kit, name) is getattr(ctxcore, name), name


def test_kit_reference_lists_every_name() -> None:
    """docs/api/kit.md has a row for every name of ``ctxcore.kit.__all__``, so the page cannot drift."""
    from pathlib import Path

    page = (Path(__file__).resolve().parent.parent / "docs" / "api" / "kit.md").read_text(encoding="utf-8")
    missing = [name for name in EXPECTED_KIT_ALL if f"| `{name}` |" not in page]
    assert missing == []
