"""``huggingface``: token counts with a local HuggingFace tokenizer, chat templates included.

Loads, from local files only (never the hub):

- a ``tokenizer.json`` file, with ``tokenizers.Tokenizer.from_file``;
- a tokenizer directory (``tokenizer.json`` plus ``tokenizer_config.json`` or
  ``chat_template.jinja``); with the ``transformers`` extra installed, any
  directory ``AutoTokenizer.from_pretrained(path, local_files_only=True)``
  accepts (slow SentencePiece tokenizers too).

With a chat template (from the directory, or given as ``chat_template``),
``count_messages`` is the exact length of the templated prompt, and a message's
count is what it adds to it: ``len(render([m])) - len(render([]))``. That sum
is exact for templates made of per-message segments delimited by special tokens
(ChatML, Llama 3, Gemma, Qwen ...), which is how the builder's cache adds
counts. Without a template, OpenAI's per-message rule is used. Images cost
``image_tokens`` each when set, else OpenAI's tile rule.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ctxcore import ImageBlock, Message, MessageCounter
from ctxcore_counter_hf.chat_template import (
    ChatTemplate,
    TemplateError,
    message_to_template_dict,
)
from ctxcore_counter_hf.config import HuggingFaceConfig

__all__ = ["HuggingFaceConfig", "HuggingFaceCounter", "TokenizerUnavailable"]


class TokenizerUnavailable(RuntimeError):
    """The tokenizer files could not be loaded; the message names the path and the fix."""


class HuggingFaceCounter(MessageCounter):
    """Counts with a HuggingFace tokenizer loaded from local files."""

    def __init__(self, path: str | Path | None = None, *, tokenizer: Any = None, chat_template: str | None = None,
                 use_chat_template: bool = True, image_tokens: int | None = None) -> None:
        if (path is None) == (tokenizer is None):
            raise TokenizerUnavailable("huggingface counter: give exactly one of path= (a local tokenizer file or "
                                       "directory) or tokenizer= (a tokenizer object already loaded)")
        self.image_tokens = image_tokens
        self.path: Path | None = None
        if tokenizer is not None:
            self._encode, config, identity = _from_object(tokenizer)
        else:
            self.path = Path(path)  # type: ignore[arg-type]  # not None here
            if not self.path.exists():
                raise TokenizerUnavailable(
                    f"huggingface counter: {self.path} does not exist; give the path of a tokenizer.json file or of a "
                    "local tokenizer directory (ctxcore never downloads tokenizers from the hub)"
                )
            self._encode, config = _load(self.path)
            identity = str(self.path.resolve())
        template_source = _template_source(chat_template, config) if use_chat_template else None
        self.template: ChatTemplate | None = None
        if template_source:
            self.template = ChatTemplate(template_source, bos_token=_token(config.get("bos_token")),
                                         eos_token=_token(config.get("eos_token")))
        digest = hashlib.blake2b((template_source or "").encode(), digest_size=4).hexdigest()
        self.name = (f"huggingface:{identity}" + (f"#template-{digest}" if self.template else "")
                     + (f"#image-{image_tokens}" if image_tokens is not None else ""))
        self._base: int | None = None

    def count_text(self, text: str) -> int:
        """Tokens of ``text`` without special tokens."""
        return len(self._encode(text)) if text else 0

    # ----------------------------------------------------------- templated
    def _templated(self, messages: Sequence[Message], add_generation_prompt: bool) -> int:
        assert self.template is not None
        rendered = self.template.render([message_to_template_dict(m) for m in messages],
                                        add_generation_prompt=add_generation_prompt)
        images = sum(self.count_image(b) for m in messages if isinstance(m.content, tuple)
                     for b in m.content if isinstance(b, ImageBlock))
        return len(self._encode(rendered)) + images

    def count_message(self, message: Message) -> int:
        """What ``message`` adds to the templated prompt (OpenAI's rule without a template)."""
        if self.template is None:
            return super().count_message(message)
        try:
            if self._base is None:
                self._base = self._templated([], add_generation_prompt=False)
            return self._templated([message], add_generation_prompt=False) - self._base
        except TemplateError:
            # Templates may refuse a lone message (e.g. "roles must alternate"): price it by the plain rule.
            return super().count_message(message)

    def count_messages(self, messages: Sequence[Message]) -> int:
        """Exact tokens of the templated prompt with the generation prompt (OpenAI's rule without a template)."""
        if self.template is None:
            return super().count_messages(messages)
        return self._templated(messages, add_generation_prompt=True)

    def count_tools(self, tools: Sequence[Mapping[str, Any]]) -> int:
        """Tokens of tool definitions: what the template adds for them, else the OpenAI cookbook rule."""
        if self.template is None or not tools:
            return super().count_tools(tools)
        with_tools = self.template.render([], add_generation_prompt=False, tools=tools)
        without = self.template.render([], add_generation_prompt=False)
        added = len(self._encode(with_tools)) - len(self._encode(without))
        return added if added > 0 else super().count_tools(tools)


def _token(value: Any) -> str:
    if isinstance(value, Mapping):  # {"content": "<s>", ...} in older tokenizer_config.json files
        return str(value.get("content", ""))
    return str(value) if value else ""


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise TokenizerUnavailable(f"huggingface counter: cannot read {path}: {exc}") from exc
    return data if isinstance(data, dict) else {}


def _template_source(explicit: str | None, config: Mapping[str, Any]) -> str | None:
    if explicit:
        candidate = Path(explicit)
        if "{" not in explicit and candidate.suffix == ".jinja":
            if not candidate.is_file():
                raise TokenizerUnavailable(f"huggingface counter: chat_template file {explicit} does not exist")
            return candidate.read_text(encoding="utf-8")
        return explicit
    template = config.get("chat_template")
    if isinstance(template, list):  # named templates: use "default"
        named = {t.get("name"): t.get("template") for t in template if isinstance(t, Mapping)}
        template = named.get("default")
    return template if isinstance(template, str) and template else None


def _load(path: Path) -> tuple[Callable[[str], list[int]], dict[str, Any]]:
    """An encode function (no special tokens added) and the tokenizer config of ``path``."""
    if path.is_file():
        return _from_tokenizer_json(path), {}
    config = _read_json(path / "tokenizer_config.json") if (path / "tokenizer_config.json").is_file() else {}
    jinja = path / "chat_template.jinja"
    if jinja.is_file() and not config.get("chat_template"):
        config["chat_template"] = jinja.read_text(encoding="utf-8")
    try:
        from transformers import AutoTokenizer
    except ImportError:
        if not (path / "tokenizer.json").is_file():
            raise TokenizerUnavailable(
                f"huggingface counter: {path} has no tokenizer.json; install 'ctxcore-counter-hf[transformers]' "
                "to load other tokenizer formats from a local directory"
            ) from None
        return _from_tokenizer_json(path / "tokenizer.json"), config
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    except Exception as exc:  # transformers raises many types (OSError, ValueError ...)
        raise TokenizerUnavailable(f"huggingface counter: transformers could not load {path}: {exc}") from exc
    if isinstance(getattr(tokenizer, "chat_template", None), str) and not config.get("chat_template"):
        config["chat_template"] = tokenizer.chat_template
    config.setdefault("bos_token", getattr(tokenizer, "bos_token", None))
    config.setdefault("eos_token", getattr(tokenizer, "eos_token", None))
    return (lambda text: tokenizer.encode(text, add_special_tokens=False)), config


def _from_object(tokenizer: Any) -> tuple[Callable[[str], list[int]], dict[str, Any], str]:
    """Encode function, config and identity of a tokenizer object (transformers or ``tokenizers``)."""
    encode = getattr(tokenizer, "encode", None)
    if not callable(encode):
        raise TokenizerUnavailable(f"huggingface counter: tokenizer= must have an encode() method, got {type(tokenizer).__name__}")
    config: dict[str, Any] = {}
    template = getattr(tokenizer, "chat_template", None)
    if isinstance(template, str) and template:
        config["chat_template"] = template
    for key in ("bos_token", "eos_token"):
        value = getattr(tokenizer, key, None)
        if isinstance(value, str):
            config[key] = value
    name = getattr(tokenizer, "name_or_path", None)
    if not isinstance(name, str) or not name:
        size = getattr(tokenizer, "get_vocab_size", None)
        name = f"{type(tokenizer).__name__}-{size() if callable(size) else len(getattr(tokenizer, 'vocab', {}) or {})}"

    def run(text: str) -> list[int]:
        encoded = encode(text, add_special_tokens=False)
        ids = getattr(encoded, "ids", encoded)  # tokenizers.Encoding or a list of ids
        return list(ids)

    return run, config, f"object-{name}"


def _from_tokenizer_json(path: Path) -> Callable[[str], list[int]]:
    from tokenizers import Tokenizer

    try:
        tokenizer = Tokenizer.from_file(str(path))
    except Exception as exc:  # tokenizers raises a plain Exception on bad files
        raise TokenizerUnavailable(f"huggingface counter: {path} is not a valid tokenizer.json: {exc}") from exc
    return lambda text: tokenizer.encode(text, add_special_tokens=False).ids
