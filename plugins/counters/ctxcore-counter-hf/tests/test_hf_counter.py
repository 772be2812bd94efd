"""Tests for ctxcore-counter-hf with a byte-level BPE tokenizer trained inside the test."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from functools import lru_cache
from pathlib import Path

import pytest
from ctxcore_counter_hf import HuggingFaceCounter, TokenizerUnavailable
from ctxcore_counter_hf.plugin import register_token_counters
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

from ctxcore import ImageBlock, Message, ProviderBlock, TextBlock, ai, human, system, tool
from ctxcore.testing import fresh_host
from ctxcore.testing.contracts.counter import SAMPLE_TEXTS, CounterContract

SPECIALS = ["<s>", "</s>", "<|im_start|>", "<|im_end|>"]
# ChatML with names, tool-call ids, tool calls and tools rendered; newlines as expressions so
# trim_blocks cannot eat them.
TEMPLATE = (
    "{{ bos_token }}"
    "{% if tools %}<|im_start|>system{{ '\\n' }}{% for t in tools %}{{ t | tojson }}{{ '\\n' }}{% endfor %}<|im_end|>{{ '\\n' }}{% endif %}"
    "{% for m in messages %}<|im_start|>{{ m.role }}"
    "{% if m.name %} name={{ m.name }}{% endif %}{% if m.tool_call_id %} id={{ m.tool_call_id }}{% endif %}{{ '\\n' }}"
    "{% if m.content is string %}{{ m.content }}{% else %}"
    "{% for p in m.content %}{% if p.type == 'text' %}{{ p.text }}{% else %}<image>{% endif %}{% endfor %}{% endif %}"
    "{% for c in m.tool_calls or [] %}<tool_call>{{ c.function | tojson }}</tool_call>{% endfor %}"
    "<|im_end|>{{ '\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant{{ '\\n' }}{% endif %}"
)


def train_tokenizer(path: Path) -> Path:
    """Train a small byte-level BPE tokenizer in-process and save it as tokenizer.json."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=700, special_tokens=SPECIALS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    corpus = list(SAMPLE_TEXTS.values()) * 5 + ["the counts behind a budget decide what a model reads"] * 20
    tokenizer.train_from_iterator(corpus, trainer)
    # Encoding with special tokens prepends <s>; counters must not count it for bare text.
    tokenizer.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", tokenizer.token_to_id("<s>"))])
    path.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(path / "tokenizer.json"))
    return path / "tokenizer.json"


@lru_cache(maxsize=1)
def tokenizer_dir() -> Path:
    """A tokenizer directory (tokenizer.json + tokenizer_config.json with a chat template), built once."""
    root = Path(tempfile.mkdtemp(prefix="ctxcore-hf-"))
    train_tokenizer(root)
    (root / "tokenizer_config.json").write_text(json.dumps({"chat_template": TEMPLATE, "bos_token": "<s>", "eos_token": {"__type": "AddedToken", "content": "</s>", "lstrip": False, "rstrip": False, "normalized": False, "single_word": False, "special": True}}))
    return root


def raw_len(text: str) -> int:
    return len(Tokenizer.from_file(str(tokenizer_dir() / "tokenizer.json")).encode(text, add_special_tokens=False).ids)


class TestTemplatedContract(CounterContract):
    openai_image_rule = False  # the template adds an <image> placeholder to the image's own cost

    def make_counter(self) -> HuggingFaceCounter:
        return HuggingFaceCounter(tokenizer_dir())


class TestPlainTokenizerContract(CounterContract):
    def make_counter(self) -> HuggingFaceCounter:
        return HuggingFaceCounter(tokenizer_dir() / "tokenizer.json")


def chatml(messages: list[dict], generation: bool = True) -> str:
    """The ChatML prompt written out by hand (independent of the jinja rendering)."""
    out = "<s>"
    for m in messages:
        head = m["role"] + (f" name={m['name']}" if m.get("name") else "") + (f" id={m['tool_call_id']}" if m.get("tool_call_id") else "")
        calls = "".join(
            "<tool_call>" + json.dumps({"name": c["name"], "arguments": c["arguments"]}, ensure_ascii=False) + "</tool_call>"
            for c in m.get("calls", [])
        )
        out += f"<|im_start|>{head}\n{m.get('content', '')}{calls}<|im_end|>\n"
    return out + ("<|im_start|>assistant\n" if generation else "")


class TestTemplatedCounts:
    def test_bare_text_has_no_special_tokens(self) -> None:
        """count_text is the tokenizer's length without the post-processor's <s>."""
        counter = HuggingFaceCounter(tokenizer_dir())
        text = SAMPLE_TEXTS["mixed"]
        assert counter.count_text(text) == raw_len(text)

    def test_request_count_is_exact_templated_length(self) -> None:
        """count_messages is the token length of the templated prompt with the generation prompt."""
        counter = HuggingFaceCounter(tokenizer_dir())
        spec = [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": SAMPLE_TEXTS["chinese"], "name": "alice"},
            {"role": "assistant", "content": "", "calls": [{"id": "c1", "name": "read_file", "arguments": {"path": "a.py"}}]},
            {"role": "tool", "content": SAMPLE_TEXTS["python"], "tool_call_id": "c1"},
        ]
        messages = [
            system("You are terse."),
            human(SAMPLE_TEXTS["chinese"], name="alice"),
            ai(tool_calls=[{"id": "c1", "name": "read_file", "arguments": {"path": "a.py"}}]),
            tool(SAMPLE_TEXTS["python"], tool_call_id="c1"),
        ]
        assert counter.count_messages(messages) == raw_len(chatml(spec))
        assert counter.count_messages([]) == raw_len(chatml([]))
        assert counter.count_message(messages[1]) == raw_len(chatml(spec[1:2], generation=False)) - raw_len("<s>")

    def test_image_tokens_option(self) -> None:
        """With image_tokens set, an image costs that many tokens plus the template's placeholder."""
        counter = HuggingFaceCounter(tokenizer_dir(), image_tokens=256)
        with_image = human([TextBlock(text="look"), ImageBlock(url="https://example.invalid/a.png")])
        assert counter.count_message(with_image) == counter.count_message(human("look")) + raw_len("<image>") + 256

    def test_explicit_template_overrides_and_disable(self, tmp_path: Path) -> None:
        """chat_template: a .jinja file replaces the directory's; use_chat_template: false uses OpenAI's rule."""
        jinja = tmp_path / "plain.jinja"
        jinja.write_text("{% for m in messages %}{{ m.content }}{% endfor %}")
        plain = HuggingFaceCounter(tokenizer_dir(), chat_template=str(jinja))
        assert plain.count_messages([human("hello world")]) == raw_len("hello world")
        off = HuggingFaceCounter(tokenizer_dir(), use_chat_template=False)
        assert off.template is None
        assert off.count_message(human("hello")) == 3 + raw_len("user") + raw_len("hello")
        assert off.name != plain.name != HuggingFaceCounter(tokenizer_dir()).name

    def test_template_refusing_a_lone_message_falls_back(self, tmp_path: Path) -> None:
        """A template that raises for one message (roles must alternate) still gives a count."""
        strict = "{% if messages and messages[0].role != 'system' %}{{ raise_exception('system first') }}{% endif %}{% for m in messages %}{{ m.content }}{% endfor %}"
        counter = HuggingFaceCounter(tokenizer_dir() / "tokenizer.json", chat_template=strict)
        assert counter.count_message(human("hello")) == 3 + raw_len("user") + raw_len("hello")

    def test_tools_are_counted_through_the_template(self) -> None:
        """count_tools is what the template adds for the tool definitions."""
        counter = HuggingFaceCounter(tokenizer_dir())
        tools = [{"type": "function", "function": {"name": "read_file", "description": "Read a file.", "parameters": {}}}]
        expected = raw_len("<s><|im_start|>system\n" + json.dumps(tools[0], ensure_ascii=False) + "\n<|im_end|>\n") - raw_len("<s>")
        assert counter.count_tools(tools) == expected


class TestLoading:
    def test_missing_path_names_it(self, tmp_path: Path) -> None:
        """A path that does not exist fails at once, naming it and saying nothing is downloaded."""
        with pytest.raises(TokenizerUnavailable, match="does-not-exist.*never downloads"):
            HuggingFaceCounter(tmp_path / "does-not-exist")

    def test_directory_without_tokenizer_json(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """Without transformers, a directory lacking tokenizer.json asks for the transformers extra."""
        monkeypatch.setitem(sys.modules, "transformers", None)  # import transformers -> ImportError
        with pytest.raises(TokenizerUnavailable, match=r"ctxcore-counter-hf\[transformers\]"):
            HuggingFaceCounter(tmp_path)

    def test_directory_without_transformers_uses_tokenizer_json(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Without transformers, a directory with tokenizer.json and a template still counts exactly."""
        monkeypatch.setitem(sys.modules, "transformers", None)
        counter = HuggingFaceCounter(tokenizer_dir())
        assert counter.count_messages([human("hello")]) == raw_len(chatml([{"role": "user", "content": "hello"}]))

    def test_transformers_refusal_is_reported(self, tmp_path: Path) -> None:
        """With transformers installed, a directory it cannot load fails naming the path."""
        pytest.importorskip("transformers")
        with pytest.raises(TokenizerUnavailable, match="transformers could not load"):
            HuggingFaceCounter(tmp_path)

    def test_corrupt_tokenizer_json(self, tmp_path: Path) -> None:
        """A tokenizer.json that is not one fails with its path."""
        bad = tmp_path / "tokenizer.json"
        bad.write_text("{not json")
        with pytest.raises(TokenizerUnavailable, match="not a valid tokenizer.json"):
            HuggingFaceCounter(bad)

    def test_registered_through_the_plugin(self) -> None:
        """The plugin registers 'huggingface' with a config that forbids unknown keys."""
        import ctxcore_counter_hf.plugin as plugin

        host = fresh_host(("ctxcore-counter-hf", plugin))
        component = host.registry.get("counter", "huggingface")
        counter = component.create({"path": str(tokenizer_dir()), "image_tokens": 10})
        assert counter.count_messages([human("hi")]) > 0
        with pytest.raises(Exception, match="extra"):
            component.create({"path": str(tokenizer_dir()), "vocab": 3})
        assert callable(register_token_counters)

    def test_loading_the_plugin_imports_no_counter_or_jinja2(self) -> None:
        """Loading the entry point in a fresh interpreter registers the counter without importing it or jinja2."""
        probe = ("import json, sys\nimport ctxcore_counter_hf.plugin\n"
                 "print(json.dumps(sorted(m for m in sys.modules if m.startswith(('jinja2', 'ctxcore_counter_hf')))))")
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
        loaded = json.loads(done.stdout.splitlines()[-1])
        assert loaded == ["ctxcore_counter_hf", "ctxcore_counter_hf.config", "ctxcore_counter_hf.plugin"]

    def test_public_names_load_on_first_use(self) -> None:
        """Every name of the package's ``__all__`` resolves through its lazy table, and ``dir()`` lists it."""
        import ctxcore_counter_hf

        for name in ctxcore_counter_hf.__all__:
            assert getattr(ctxcore_counter_hf, name) is not None
            assert name in dir(ctxcore_counter_hf)
        with pytest.raises(AttributeError, match="NoSuchName"):
            ctxcore_counter_hf.NoSuchName  # noqa: B018


def test_message_content_list_without_images_renders_as_text() -> None:
    """Text-block content reaches the template as one string (blocks joined by newlines, as Message.text does)."""
    counter = HuggingFaceCounter(tokenizer_dir())
    blocks = Message(role="user", content=(TextBlock(text="hello "), TextBlock(text="world")))
    assert counter.count_message(blocks) == counter.count_message(human("hello \nworld"))


def test_provider_blocks_are_counted_by_their_json() -> None:
    """A server tool call and result count as their compact JSON in place, with or without a template."""
    search = ProviderBlock(api="anthropic", raw={"type": "server_tool_use", "id": "srv_1", "name": "web_search",
                                                 "input": {"query": "the counts behind a budget"}})
    image = ImageBlock(url="https://example.invalid/a.png")
    with_block = Message(role="assistant", content=(search, TextBlock(text="found")))
    templated = HuggingFaceCounter(tokenizer_dir())
    assert templated.count_message(with_block) == templated.count_message(ai(search.wire_json + "\nfound"))
    plain = HuggingFaceCounter(tokenizer_dir() / "tokenizer.json")
    assert plain.count_message(with_block) == plain.count_message(ai("found")) + raw_len(search.wire_json)
    templated = HuggingFaceCounter(tokenizer_dir(), image_tokens=5)
    mixed = human([TextBlock(text="look"), search, image])
    assert templated.count_message(mixed) == templated.count_message(human([TextBlock(text="look" + search.wire_json), image]))


def test_counts_equal_transformers_apply_chat_template() -> None:
    """With transformers installed, a directory loads through AutoTokenizer and counts equal apply_chat_template."""
    transformers = pytest.importorskip("transformers")
    tok = transformers.AutoTokenizer.from_pretrained(str(tokenizer_dir()), local_files_only=True)
    counter = HuggingFaceCounter(tokenizer_dir())
    messages = [
        system("You are terse."),
        human(SAMPLE_TEXTS["mixed"], name="alice"),
        ai(tool_calls=[{"id": "c1", "name": "read_file", "arguments": {"path": "a.py"}}]),
        tool(SAMPLE_TEXTS["json"], tool_call_id="c1"),
    ]
    as_dicts = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": SAMPLE_TEXTS["mixed"], "name": "alice"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": {"path": "a.py"}}}]},
        {"role": "tool", "content": SAMPLE_TEXTS["json"], "tool_call_id": "c1"},
    ]
    out = tok.apply_chat_template(as_dicts, tokenize=True, add_generation_prompt=True)
    ids = out["input_ids"] if hasattr(out, "keys") else out
    assert counter.count_messages(messages) == len(ids)
    assert counter.count_text(SAMPLE_TEXTS["korean"]) == len(tok.encode(SAMPLE_TEXTS["korean"], add_special_tokens=False))


def test_counters_differing_in_image_tokens_do_not_share_cached_counts() -> None:
    """Two huggingface counters on one tokenizer but with different image_tokens, sharing one
    CountCache: each counts an image message with its own rule (the cache key is the identity)."""
    from ctxcore import CachedCounter, CountCache

    message = Message(role="user", content=(TextBlock(text="look"), ImageBlock(url="https://example.com/a.png")))
    flat_10 = HuggingFaceCounter(tokenizer_dir(), image_tokens=10)
    flat_500 = HuggingFaceCounter(tokenizer_dir(), image_tokens=500)
    assert flat_500.count_message(message) - flat_10.count_message(message) == 490
    cache = CountCache()
    assert CachedCounter(flat_10, cache=cache).count_message(message) == flat_10.count_message(message)
    assert CachedCounter(flat_500, cache=cache).count_message(message) == flat_500.count_message(message)


class TestTokenizerObject:
    """A tokenizer already loaded in the process, given as ``tokenizer=`` instead of a path."""

    def test_transformers_object_counts_like_its_directory(self) -> None:
        """A transformers tokenizer object counts exactly as the directory it was loaded from, template included."""
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(str(tokenizer_dir()), local_files_only=True)
        by_object, by_path = HuggingFaceCounter(tokenizer=tok), HuggingFaceCounter(tokenizer_dir())
        messages = [system("You are terse."), human(SAMPLE_TEXTS["mixed"])]
        assert by_object.template is not None
        assert by_object.count_messages(messages) == by_path.count_messages(messages)
        assert by_object.count_text(SAMPLE_TEXTS["korean"]) == raw_len(SAMPLE_TEXTS["korean"])
        assert by_object.name.startswith("huggingface:object-")

    def test_tokenizers_object_counts_without_special_tokens(self) -> None:
        """A tokenizers.Tokenizer object is accepted; its post-processor's <s> is not counted for bare text."""
        tok = Tokenizer.from_file(str(tokenizer_dir() / "tokenizer.json"))
        counter = HuggingFaceCounter(tokenizer=tok)
        assert counter.count_text(SAMPLE_TEXTS["english"]) == raw_len(SAMPLE_TEXTS["english"])
        assert counter.template is None

    def test_exactly_one_source(self) -> None:
        """Neither or both of path and tokenizer, or an object without encode(), fail naming the options."""
        with pytest.raises(TokenizerUnavailable, match="exactly one of path"):
            HuggingFaceCounter()
        with pytest.raises(TokenizerUnavailable, match="exactly one of path"):
            HuggingFaceCounter(tokenizer_dir(), tokenizer=object())
        with pytest.raises(TokenizerUnavailable, match="encode"):
            HuggingFaceCounter(tokenizer=object())

    def test_pipeline_option_from_python(self) -> None:
        """`counter: {type: huggingface, tokenizer: obj}` works from Python; a YAML pipeline cannot name an object."""
        from ctxcore import ConfigError, Pipeline

        tok = Tokenizer.from_file(str(tokenizer_dir() / "tokenizer.json"))
        pipe = Pipeline.from_dict({"version": 1, "counter": {"type": "huggingface", "tokenizer": tok},
                                   "providers": [{"type": "history"}]})
        built = pipe.build({"messages": [{"role": "user", "content": "hello"}]})
        assert built.report.total_tokens > 0
        with pytest.raises(ConfigError, match="exactly one of 'path'"):
            Pipeline.from_string("version: 1\ncounter: {type: huggingface}\nproviders: [{type: history}]\n")
