"""The reference documents' minimal examples, run unchanged against ``ctxcore.compat``.

Each ``EXAMPLE_*`` string is a code block copied verbatim from the reference
document named above it (``../shared/seeds``; the documents are not part of
the repository, so the blocks are pinned here). The reference import paths
(``jianmu.memory.context``, ``jianmu.message`` ...) are aliased to
``ctxcore.compat`` for the duration of a test, so the code runs exactly as
written; the assertions check the outputs the documents state.
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import ctxcore.compat as compat
from ctxcore import BudgetExceeded, ContextBuilder, Message, PromptRuntimeContext, ai, human, system
from ctxcore.errors import PluginError


@pytest.fixture(autouse=True)
def _installed_plugins(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """compat resolves components through the default host: load the installed workspace plugins."""
    from ctxcore.plugins.host import reset_default_host

    monkeypatch.delenv("CTXCORE_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    reset_default_host()
    yield
    reset_default_host()


_ALIASES = ("jianmu", "jianmu.message", "jianmu.memory", "jianmu.memory.context", "jianmu.memory.context.base")


@pytest.fixture
def reference_imports(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Make the reference import paths resolve to ctxcore.compat."""
    for name in _ALIASES:
        module = types.ModuleType(name)
        module.__dict__.update({k: getattr(compat, k) for k in compat.__all__})
        monkeypatch.setitem(sys.modules, name, module)
    yield


def run(code: str, **names: Any) -> dict[str, Any]:
    namespace: dict[str, Any] = dict(names)
    exec(compile(code, "<reference example>", "exec"), namespace)  # noqa: S102 - pinned reference text
    return namespace


# --------------------------------------------------------- 000 context builder
# 000 "消息基础：Message 模型与存储"
EXAMPLE_FACTORIES = '''
# 轻量工厂函数
from jianmu.message import system, human, ai, tool

system("You are a helpful assistant.")   # role="system"
human("What is 2+2?")                    # role="user"
ai("The answer is 4.")                   # role="assistant"
tool('{"result": 4}', name="calculator") # role="tool"
'''

# 000 "StaticPromptProvider：静态提示词注入"
EXAMPLE_STATIC = '''
from jianmu.memory.context import StaticPromptProvider
provider = StaticPromptProvider("You are a helpful assistant.")
# → [system("You are a helpful assistant.")]
'''

# 000 "ToolsDescProvider：工具描述注入"
EXAMPLE_TOOLS = '''
from jianmu.memory.context import ToolsDescProvider
provider = ToolsDescProvider("- calculator: perform arithmetic\\n- search: web search")
# → [system("Available tools:\\n- calculator: perform arithmetic\\n- search: web search")]
'''

# 000 "MaxMessagesFilter：消息数量裁剪"
EXAMPLE_MAX_MESSAGES = '''
from jianmu.memory.context import MaxMessagesFilter

f = MaxMessagesFilter(max_messages=5, pinned_roles=("system",))
# 输入: [sys1, sys2, u1, a1, u2, a2, u3, a3]
# 输出: [sys1, sys2, a1, u2, a2, u3, a3]  # 钉住前2条 + 最近3条
'''

# 000 "for_chat：纯对话上下文" and "for_react：ReAct Agent 上下文"
EXAMPLE_FOR_CHAT = '''
builder = ContextBuilder.for_chat(
    system_prompt="You are a helpful assistant.",
    max_messages=50,
    max_tokens=8000,
    runtime_prompt=PromptRuntimeContext(include_bootstrap_files=True),
)
'''
EXAMPLE_FOR_REACT = '''
builder = ContextBuilder.for_react(
    system_prompt="You are a math assistant.",
    tools_desc="- calculator: perform arithmetic\\n- search: web search",
    max_messages=30,
    max_tokens=16000,
)
'''

# 000 "扩展指南：自定义 Provider 与 Filter"
EXAMPLE_CUSTOM_PROVIDER = '''
from jianmu.memory.context.base import MessageProvider
from jianmu.message import Message, system
from datetime import datetime

class TimestampProvider:
    def get_messages(self, local_state, global_state=None, ctx=None):
        ts = datetime.now().isoformat()
        return [system(f"Current time: {ts}")]
'''
EXAMPLE_CUSTOM_FILTER = '''
class DeduplicateFilter:
    def apply(self, messages, local_state=None, global_state=None, ctx=None, **kwargs):
        result = []
        for msg in messages:
            if result and msg.role == "user" and result[-1].role == "user":
                if msg.content == result[-1].content:
                    continue
            result.append(msg)
        return result
'''

# ------------------------------------------------------------- 002 memory
# 002 "5. 最小示例"
EXAMPLE_MEMORY = '''
from jianmu.memory import FileCheckpointer, Mem0LongTermMemory, SimpleStore, create_memory_tools

store = SimpleStore()
checkpointer = FileCheckpointer()
memory_tools = create_memory_tools(long_term_memory=store)
long_term_memory = Mem0LongTermMemory()
'''

_HISTORY = [system("sys1"), system("sys2"), human("u1"), ai("a1"), human("u2"), ai("a2"), human("u3"), ai("a3")]


def _texts(messages: list[Message]) -> list[str]:
    return [m.text for m in messages]


@pytest.mark.usefixtures("reference_imports")
class TestContextBuilderExamples:
    """000: the context builder document's examples."""

    def test_factories(self) -> None:
        """The block runs as written; the four factories give the documented roles; tool() needs no tool_call_id."""
        ns = run(EXAMPLE_FACTORIES)
        made = [ns["system"]("s"), ns["human"]("h"), ns["ai"]("a"), ns["tool"]('{"result": 4}', name="calculator")]
        assert [m.role for m in made] == ["system", "user", "assistant", "tool"]
        assert made[3].name == "calculator" and made[3].tool_call_id == "call_calculator"

    def test_static_prompt(self) -> None:
        """StaticPromptProvider gives [system(prompt)]; an empty prompt gives nothing."""
        provider = run(EXAMPLE_STATIC)["provider"]
        (message,) = provider.get_messages({})
        assert (message.role, message.content) == ("system", "You are a helpful assistant.")
        assert compat.StaticPromptProvider("").get_messages({}) == []

    def test_tools_desc(self) -> None:
        """ToolsDescProvider wraps the block in the default 'Available tools:' template."""
        provider = run(EXAMPLE_TOOLS)["provider"]
        (message,) = provider.get_messages({})
        assert message.role == "system"
        assert message.content == "Available tools:\n- calculator: perform arithmetic\n- search: web search"

    def test_max_messages(self) -> None:
        """The documented input gives the documented output: the pinned prefix and the newest five others."""
        f = run(EXAMPLE_MAX_MESSAGES)["f"]
        assert _texts(f.apply(_HISTORY)) == ["sys1", "sys2", "a1", "u2", "a2", "u3", "a3"]

    def test_presets(self) -> None:
        """for_chat and for_react (native ctxcore names) build the documented provider chains."""
        chat = run(EXAMPLE_FOR_CHAT, ContextBuilder=ContextBuilder, PromptRuntimeContext=PromptRuntimeContext)["builder"]
        built = chat.build({"messages": [{"role": "user", "content": "hi"}]})
        assert _texts(built.messages)[0] == "You are a helpful assistant." and built.messages[-1].text == "hi"
        react = run(EXAMPLE_FOR_REACT, ContextBuilder=ContextBuilder, PromptRuntimeContext=PromptRuntimeContext)["builder"]
        texts = _texts(react.build({"messages": [{"role": "user", "content": "2+2?"}]}).messages)
        assert texts[0] == "You are a math assistant." and "Final Answer:" in texts[1]
        assert texts[2] == "Available tools:\n- calculator: perform arithmetic\n- search: web search"

    def test_custom_provider_and_filter_in_a_native_builder(self) -> None:
        """The documented custom provider and filter run as written, alone and inside ContextBuilder(providers, filters)."""
        ns = run(EXAMPLE_CUSTOM_PROVIDER + EXAMPLE_CUSTOM_FILTER)
        provider, dedupe = ns["TimestampProvider"](), ns["DeduplicateFilter"]()
        assert isinstance(provider, compat.MessageProvider) and isinstance(dedupe, compat.ContextFilter)
        assert provider.get_messages({})[0].text.startswith("Current time: ")
        history = compat.StateHistoryProvider()
        builder = ContextBuilder(providers=[provider, history], filters=[dedupe], counter=compat.SimpleTokenCounter())
        state = {"messages": [{"role": "user", "content": "same"}, {"role": "user", "content": "same"}]}
        built = builder.build(state)
        assert [m.role for m in built.messages] == ["system", "user"]


@pytest.mark.usefixtures("reference_imports")
class TestMemoryExamples:
    """002: the memory module's minimal example and the documented API results."""

    def test_minimal_example(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """store, checkpointer and tools are created with configured defaults; Mem0LongTermMemory needs mem0ai."""
        monkeypatch.chdir(tmp_path)
        (tmp_path / "ctxcore.yaml").write_text("paths: {checkpoints_dir: state/ckpt, memory_store: state/mem.json}\n")
        ns: dict[str, Any] = {}
        if importlib.util.find_spec("mem0") is None:
            with pytest.raises(RuntimeError, match=r"pip install 'ctxcore-memory-mem0\[mem0\]'"):
                exec(compile(EXAMPLE_MEMORY, "<reference example>", "exec"), ns)  # noqa: S102
        else:  # pragma: no cover - mem0's default configuration calls a hosted model
            pytest.skip("mem0ai is installed; its default configuration needs a hosted model")
        assert ns["store"].path == Path("state/mem.json") and ns["checkpointer"].storage_dir == Path("state/ckpt")
        search, add = ns["memory_tools"]
        assert (search.name, add.name) == ("memory_search", "memory_add")
        assert asyncio.run(add.run("The user likes green tea", key="tea")) == "Stored (id: tea, key: tea)"
        assert asyncio.run(search.run("green tea")) == "1. id=tea content=The user likes green tea"
        ns["checkpointer"].save_checkpoint("t1", 1, {"messages": []})
        assert ns["checkpointer"].get_checkpoint("t1")["step"] == 1
        assert (tmp_path / "state" / "ckpt" / "t1.jsonl").is_file() and (tmp_path / "state" / "mem.json").is_file()

    def test_simple_store_results(self, tmp_path: Path) -> None:
        """record returns {"results": [...]}, requires key, retrieve ranks substring matches, format says 'No results.'."""
        store = compat.SimpleStore(str(tmp_path / "m.json"))
        out = store.record("Alice prefers tabs", namespace=("user", "42"), key="k1", metadata={"topic": "style"})
        assert out == {"results": [{"id": "k1", "content": "Alice prefers tabs", "metadata": {"topic": "style"}}]}
        assert store.record("", key="x") == {"results": []}
        with pytest.raises(ValueError, match="requires a non-empty 'key'"):
            store.record("no key here")
        hits = store.retrieve("prefers tabs", namespace=("user", "42"))
        assert [h["id"] for h in hits] == ["k1"]
        assert store.retrieve("prefers tabs", namespace=("user", "43")) == []
        assert store.format_retrieved(hits) == "1. id=k1 content=Alice prefers tabs metadata={'topic': 'style'}"
        assert store.format_retrieved([]) == "No results."
        store.delete(hits[0], namespace=("user", "42"))
        assert store.retrieve("tabs", namespace=("user", "42")) == []

    def test_tools_texts(self, tmp_path: Path) -> None:
        """The tools' documented texts: missing arguments, empty search, and both tools required a backend."""
        store = compat.SimpleStore(str(tmp_path / "m.json"))
        search, add = compat.create_memory_tools(("team",), long_term_memory=store)
        assert asyncio.run(add.run()) == "Error: no content provided"
        assert asyncio.run(search.run()) == "Error: no query provided"
        assert asyncio.run(search.run("anything")) == "No results."
        assert asyncio.run(add.run(input="deploys on Tuesdays")).startswith("Stored (id: ")
        assert "deploys on Tuesdays" in asyncio.run(search.run("Tuesdays", k=1))
        assert asyncio.run(search.run("Tuesdays", namespace=["other"])) == "No results."
        for make in (compat.MemoryAddTool, compat.MemorySearchTool):
            with pytest.raises(ValueError, match="requires one of 'memory' or 'long_term_memory'"):
                make()
        with pytest.raises(ValueError):
            compat.create_memory_tools()

    def test_tools_over_a_native_store(self, tmp_path: Path) -> None:
        """The compat tools accept a ctxcore MemoryService or store as the backend."""
        from ctxcore import MemoryService
        from ctxcore.plugins.host import default_host

        native = default_host().registry.get("memory", "sqlite").create({"path": str(tmp_path / "m.db")})
        search, add = compat.create_memory_tools(("u",), memory=MemoryService(native))
        asyncio.run(add.run("the build cache lives in /var/cache", key="c1"))
        assert asyncio.run(search.run("build cache")).startswith("1. id=c1 content=the build cache")

    def test_checkpointers(self, tmp_path: Path) -> None:
        """InMemory keeps the latest step, Null keeps nothing, File writes <thread>.jsonl; stale steps raise."""
        from ctxcore import StaleWrite

        mem, null, file = compat.InMemoryCheckpointer(), compat.NullCheckpointer(), compat.FileCheckpointer(str(tmp_path))
        for cp in (mem, null, file):
            cp.save_checkpoint("t", 1, {"x": 1}, tree_state={"node": "a"}, runtime_metadata={"r": 1})
        assert null.get_checkpoint("t") is None
        for cp in (mem, file):
            got = cp.get_checkpoint("t")
            assert got is not None and (got["step"], got["state_dump"], got["tree_state"]) == (1, {"x": 1}, {"node": "a"})
            assert cp.list_threads() == ["t"]
            with pytest.raises(StaleWrite):
                cp.save_checkpoint("t", 1, {"x": 2})
        assert (tmp_path / "t.jsonl").is_file()


class TestCounters:
    """002: the three counters' documented rules."""

    def test_simple(self) -> None:
        """chars // chars_per_token per message, at least 1; the ratio is max(1, int(x))."""
        c = compat.SimpleTokenCounter()
        assert c.count_message(human("x" * 41)) == 10 and c.count_message(human("")) == 1
        assert c.count_messages([human("x" * 8), ai("y" * 8)]) == 4
        assert compat.SimpleTokenCounter(chars_per_token=0).chars_per_token == 1

    def test_tiktoken(self) -> None:
        """Exact counts of the text; encoding_name wins over model; cl100k_base by default."""
        from ctxcore_counters.encodings import load_encoding  # the offline loader (no network in tests)

        text = "预算取决于计数: token budgets decide what the model reads."
        cl100k = len(load_encoding("cl100k_base").encode(text))
        assert compat.TiktokenTokenCounter().count_message(human(text)) == cl100k
        o200k = compat.TiktokenTokenCounter(model="gpt-3.5-turbo", encoding_name="o200k_base")
        assert o200k.count_message(human(text)) == len(load_encoding("o200k_base").encode(text)) != cl100k
        assert compat.TiktokenTokenCounter(model="gpt-3.5-turbo").count_message(human(text)) == cl100k
        assert o200k.count_message(human("")) == 1

    def test_hf_needs_a_source(self) -> None:
        """HFTokenCounter without tokenizer or model_name raises the reference ValueError."""
        with pytest.raises(ValueError, match="model_name is required when tokenizer is not provided"):
            compat.HFTokenCounter()

    def test_hf_tokenizer_object(self) -> None:
        """A prebuilt tokenizer object counts its own encode() length without special tokens."""
        from tokenizers import Tokenizer, models, pre_tokenizers, trainers

        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.Whitespace()
        tok.train_from_iterator(["the cat sat on the mat"] * 10, trainers.BpeTrainer(vocab_size=60))
        counter = compat.HFTokenCounter(tokenizer=tok)
        assert counter.count_message(human("the cat sat")) == len(tok.encode("the cat sat").ids)


class TestFilters:
    """The budget filter with the reference counter, and the deliberate differences."""

    def test_token_budget_trims_oldest(self) -> None:
        """With SimpleTokenCounter every short message costs 1: a budget of 5 keeps the pins and the newest 3."""
        f = compat.TokenBudgetFilter(max_tokens=5)
        assert _texts(f.apply(_HISTORY)) == ["sys1", "sys2", "a2", "u3", "a3"]
        newest_dropped = compat.TokenBudgetFilter(max_tokens=5, trim_from_start=False).apply(_HISTORY)
        assert _texts(newest_dropped) == ["sys1", "sys2", "u1", "a1", "u2"]  # the newest dropped first, as in the reference

    def test_over_budget_raises(self) -> None:
        """ctxcore differs: pinned prefix plus current turn over budget raises BudgetExceeded, never silently."""
        with pytest.raises(BudgetExceeded):
            compat.TokenBudgetFilter(max_tokens=2).apply(_HISTORY)

    def test_dict_messages_and_tool_units(self) -> None:
        """OpenAI dicts are accepted, and a tool call is never separated from its result."""
        history = [{"role": "system", "content": "s"}, {"role": "user", "content": "q"},
                   {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
                    "function": {"name": "f", "arguments": "{}"}}]},
                   {"role": "tool", "tool_call_id": "c1", "content": "r"}, {"role": "user", "content": "next"}]
        assert _texts(compat.MaxMessagesFilter(2).apply(history)) == ["s", "next"]  # the call unit would make 3
        assert [m.role for m in compat.MaxMessagesFilter(3).apply(history)] == ["system", "assistant", "tool", "user"]


class TestProviders:
    """History annotation and the file-reading providers delegate to the native ones."""

    def test_history_from_list_dict_and_object(self) -> None:
        """StateHistoryProvider reads a list, a dict's state_key or an attribute; tool plans are annotated."""
        calls = [{"role": "user", "content": "q"},
                 {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
                  "function": {"name": "f", "arguments": "{}"}}]},
                 {"role": "tool", "tool_call_id": "c1", "content": "r"}]
        provider = compat.StateHistoryProvider()
        from_list = provider.get_messages(calls)
        assert from_list[0].role == "system" and "History semantics" in from_list[0].text
        assert {m.metadata.get("semantic_kind") for m in from_list} >= {"self_tool_plan", "tool_observation"}
        assert len(compat.StateHistoryProvider("log").get_messages({"log": calls})) == len(from_list)
        assert len(provider.get_messages(types.SimpleNamespace(messages=calls))) == len(from_list)
        assert provider.get_messages(None) == []

    def test_bootstrap_files_are_untrusted_data(self, tmp_path: Path) -> None:
        """BootstrapFilesProvider reads through the native provider: a user-role block, never a system message."""
        (tmp_path / "AGENTS.md").write_text("Run the tests before committing.")
        messages = compat.BootstrapFilesProvider(str(tmp_path)).get_messages({})
        assert messages and all(m.role != "system" for m in messages)
        assert "Run the tests before committing." in messages[0].text and "AGENTS.md" in messages[0].text

    def test_skills(self, tmp_path: Path) -> None:
        """SkillSetPromptProvider renders the catalog through the native skills provider."""
        skill = tmp_path / "skills" / "deploy"
        skill.mkdir(parents=True)
        (skill / "SKILL.md").write_text("---\nname: deploy\ndescription: Ship the service\n---\nRun make deploy.\n")
        text = "\n".join(m.text for m in compat.SkillSetPromptProvider("skills", workspace_dir=str(tmp_path)).get_messages({}))
        assert "deploy" in text and "Ship the service" in text


class TestMissingPlugin:
    """A compat class whose plugin is not loaded names the distribution to install."""

    def test_names_the_distribution(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """With ctxcore-counters blocked, SimpleTokenCounter raises PluginError naming it."""
        from ctxcore.plugins.host import reset_default_host

        monkeypatch.setenv("CTXCORE_BLOCK_PLUGINS", "ctxcore-counters")
        reset_default_host()
        try:
            with pytest.raises(PluginError, match=r"SimpleTokenCounter needs the counter 'approximate'.*pip install ctxcore-counters"):
                compat.SimpleTokenCounter()
        finally:
            monkeypatch.delenv("CTXCORE_BLOCK_PLUGINS")
            reset_default_host()


class TestReferenceEdges:
    """Edge cases the reference code documents."""

    def test_no_limit_keeps_everything(self) -> None:
        """max_messages=None and max_tokens=None return the messages unchanged."""
        assert _texts(compat.MaxMessagesFilter(None).apply(_HISTORY)) == _texts(_HISTORY)
        assert _texts(compat.TokenBudgetFilter(None).apply(_HISTORY)) == _texts(_HISTORY)

    def test_empty_query_lists_the_namespace(self, tmp_path: Path) -> None:
        """SimpleStore.retrieve('') lists the namespace's memories by id, up to limit."""
        store = compat.SimpleStore(str(tmp_path / "m.json"))
        for key in ("b", "a", "c"):
            store.record(f"memory {key}", key=key)
        assert [i["id"] for i in store.retrieve("", limit=2)] == ["a", "b"]

    def test_ctx_working_memory(self) -> None:
        """StateHistoryProvider uses ctx.working_memory when it has none of its own."""
        class LastOnly:
            def build_view(self, messages):
                return list(messages)[-1:]

        out = compat.StateHistoryProvider().get_messages([human("a"), ai("b")], None, types.SimpleNamespace(working_memory=LastOnly()))
        assert _texts(out) == ["b"]


def test_bad_option_names_the_compat_class() -> None:
    """An option the native component refuses is a ConfigError naming the compat class and the option."""
    from ctxcore import ConfigError

    with pytest.raises(ConfigError, match=r"ctxcore.compat.MaxMessagesFilter max_messages: .*greater than or equal to 0"):
        compat.MaxMessagesFilter(-1)


# ------------------------------------------------------------- 004 ChachaAgent
# 004 "5. ContextManager 使用示例": 基本初始化, 注入各类内容, 组装上下文, 完整示例, build_system_prompt, 消息格式互转
EXAMPLE_CHACHA_INIT = '''
from core.context_manager import ContextManager
from core.models.config import ContextConfig

# 使用默认配置（max_tokens=1048576, trigger_ratio=0.8）
mgr = ContextManager()

# 或自定义配置
mgr = ContextManager(ContextConfig(
    max_tokens=200_000,
    compression_trigger_ratio=0.75,
    enable_summarization=True,
))
'''
EXAMPLE_CHACHA_INJECT = '''
# —— protected zone（永不截断）——
mgr.set_system_prompt("你是 ChachaAgent...")
mgr.set_static_rules(chacha_md_content)           # CHACHA.md 宪法
mgr.set_global_permanent_memory(user_memory)       # ~/.chacha/USER_MEMORY.md
mgr.set_permanent_memory(project_permanent_memory) # CHACHA_MEMORY.md
mgr.set_skills(tool_schemas)                       # 工具/技能定义

# —— dynamic zone（可压缩）——
mgr.set_memory_index(memory_md_content)           # MEMORY.md 轻量索引
mgr.set_session_memory(today_session_text)         # 今日会话记忆
'''
EXAMPLE_CHACHA_ASSEMBLE = '''
from core.models.session import ConversationState

state = ConversationState()  # 从对话历史构建

ctx = mgr.assemble(
    state=state,
    session_id="abc-123",
    static_rules=None,           # None → 使用已注入的
    skills=None,
    memory_content=None,
    additional_contexts=None,    # 钩子注入的额外 ContextBlock
)

# 检查压缩状态
print(f"Token: {ctx.meta.total_tokens}/{ctx.meta.budget_per_request}")
print(f"利用率: {ctx.meta.utilization_ratio:.1%}")
print(f"需压缩: {ctx.needs_compression}")
print(f"推荐级别: {ctx.recommended_level}")

# 转为 OpenAI 消息格式
messages = ContextManager.blocks_to_messages(ctx)
'''
EXAMPLE_CHACHA_FULL = '''
from core.context_manager import ContextManager
from core.models.config import ContextConfig
from core.models.session import ConversationState, MessageEvent

# 1. 初始化
mgr = ContextManager(ContextConfig(max_tokens=500_000, compression_trigger_ratio=0.8))
mgr.set_system_prompt("你是 ChachaAgent，一个 AI 助手。")
mgr.set_static_rules("--- 项目宪法 ---\\n- 代码风格: PEP 8")
mgr.set_permanent_memory("### 关键决策\\n- 使用 SQLite 数据库")
mgr.set_memory_index("### 用户偏好\\n- 偏好简洁回复")

# 2. 构建对话状态
state = ConversationState()
state.add_event(MessageEvent(source="user", role="user", content="帮我写一个 hello world"))

# 3. 组装
ctx = mgr.assemble(state, session_id="demo-1")
messages = ContextManager.blocks_to_messages(ctx)

# 4. 发送给 LLM Invoker
# response = await invoker.invoke(messages=messages, session_id="demo-1")
'''
EXAMPLE_CHACHA_SYSTEM_PROMPT = '''
from core.context_manager import ContextManager
from core.context.memory_manager import MemoryManager

system_prompt = ContextManager.build_system_prompt(
    project_root="/path/to/project",
    base_prompt="你是 ChachaAgent...",
    memory_manager=MemoryManager(project_root="/path/to/project"),
)
'''
EXAMPLE_CHACHA_CONVERT = '''
# AssembledContext → OpenAI 消息列表
messages = ContextManager.blocks_to_messages(ctx)

# OpenAI 消息列表 → ConversationState（用于恢复对话）
state = ContextManager.messages_to_state(
    messages,
    session_id="restored-session",
    project_id="my-project",
)
'''

_CHACHA_ALIASES = ("core", "core.context_manager", "core.models", "core.models.config", "core.models.session",
                   "core.context", "core.context.memory_manager")


@pytest.fixture
def chacha_imports(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Make ChachaAgent's import paths resolve to ctxcore.compat."""
    for name in _CHACHA_ALIASES:
        module = types.ModuleType(name)
        module.__dict__.update({k: getattr(compat, k) for k in compat.__all__})
        monkeypatch.setitem(sys.modules, name, module)
    yield


@pytest.mark.usefixtures("chacha_imports")
class TestChachaExamples:
    """004: the ContextManager usage section, run as written."""

    def test_full_example(self) -> None:
        """The complete example: protected blocks as system messages, the memory index as data, then the user."""
        ns = run(EXAMPLE_CHACHA_FULL)
        roles = [m["role"] for m in ns["messages"]]
        assert roles == ["system", "system", "system", "user", "user"]
        assert ns["messages"][0]["content"] == "你是 ChachaAgent，一个 AI 助手。"
        assert "偏好简洁回复" in ns["messages"][3]["content"] and ns["messages"][-1]["content"] == "帮我写一个 hello world"
        ctx = ns["ctx"]
        assert ctx.meta.budget_per_request == 500_000 and 0 < ctx.meta.total_tokens < 200
        assert ctx.needs_compression is False and ctx.recommended_level.name == "NONE"
        assert ctx.meta.session_id == "demo-1"

    def test_init_inject_assemble_convert(self, capsys: pytest.CaptureFixture[str]) -> None:
        """The initialisation, injection, assembly and conversion blocks run in sequence as documented."""
        ns = run(EXAMPLE_CHACHA_INIT)
        assert ns["mgr"].config.max_tokens == 200_000 and ns["mgr"].config.compression_trigger_ratio == 0.75
        tools = [{"type": "function", "function": {"name": "read_file", "description": "Read a file."}}]
        ns.update(chacha_md_content="- 代码风格: PEP 8", user_memory="- 用户喜欢中文", project_permanent_memory="- 使用 SQLite",
                  tool_schemas=tools, memory_md_content="- 偏好简洁", today_session_text="- 今天修了 bug")
        run(EXAMPLE_CHACHA_INJECT, **ns)
        ns = run(EXAMPLE_CHACHA_ASSEMBLE, **ns)
        out = capsys.readouterr().out
        assert "需压缩: False" in out and "推荐级别: PressureLevel.NONE" in out and "/200000" in out
        texts = [m["content"] for m in ns["messages"]]
        assert [m["role"] for m in ns["messages"]][:5] == ["system"] * 5 and "read_file" in texts[4]
        assert all(m["role"] == "user" for m in ns["messages"][5:])  # memory index and session memory: data, not system
        converted = run(EXAMPLE_CHACHA_CONVERT, **ns)["state"]
        assert converted.session_id == "restored-session" and converted.project_id == "my-project"
        assert converted.events == []  # the manager's own blocks are not conversation; the state had none
        ns["state"].add_event(compat.MessageEvent(source="user", role="user", content="继续"))
        again = compat.ContextManager.messages_to_state(compat.ContextManager.blocks_to_messages(ns["mgr"].assemble(ns["state"])))
        assert [(e.role, e.content) for e in again.events] == [("user", "继续")]

    def test_pressure_from_a_full_window(self) -> None:
        """A conversation filling most of the window needs compression, at the level of the reference table."""
        mgr = compat.ContextManager(compat.ContextConfig(max_tokens=1000, compression_trigger_ratio=0.8))
        state = compat.ConversationState()
        state.add_event(compat.MessageEvent(source="user", role="user", content="word " * 850))
        ctx = mgr.assemble(state)
        assert ctx.needs_compression and 0.8 < ctx.meta.utilization_ratio <= 0.95
        assert ctx.recommended_level.name == "SUMMARIZED"

    def test_build_system_prompt(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """build_system_prompt runs as written (a missing project gives the base prompt) and reads files natively."""
        assert run(EXAMPLE_CHACHA_SYSTEM_PROMPT)["system_prompt"] == "你是 ChachaAgent..."
        monkeypatch.setenv("HOME", str(tmp_path / "home"))
        (tmp_path / "CHACHA.md").write_text("- 代码风格: PEP 8")
        (tmp_path / "MEMORY.md").write_text("- 偏好简洁")
        prompt = compat.ContextManager.build_system_prompt(str(tmp_path), base_prompt="base")
        assert prompt.startswith("base\n\n") and "## CHACHA.md" in prompt and "偏好简洁" in prompt
