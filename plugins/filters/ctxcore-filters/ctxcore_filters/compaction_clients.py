"""The chat clients behind ``ChatSummarizer`` and ``ChatSelector``: the user's own SDK client, or none.

A summarizer needs one thing from a model: ``complete(messages, max_tokens) ->
text``. :func:`chat_client` gives that from what the user has:

- an ``openai.OpenAI`` or ``openai.AsyncOpenAI`` client (or any object with
  ``chat.completions.create``: Azure, an OpenAI-compatible gateway, a proxy),
  used as configured: its base URL, auth, proxies, timeouts and retries;
- an ``anthropic.Anthropic`` or ``AsyncAnthropic`` client (``messages.create``);
- a :class:`~ctxcore_filters.compaction_summarizers.ChatEndpoint`, the
  dependency-free HTTP client with its own bounded retries.

Invariant: every failure of a client becomes one :class:`SummarizerError` naming the
endpoint, so the compaction filter's ``on_error`` handles all clients alike.
Why: users already configure a client for their agent; a summarizer that
speaks HTTP by hand would ignore every setting they made there.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Coroutine
from typing import Any, Protocol

from ctxcore import CtxError

__all__ = ["AnthropicClientChat", "ChatClient", "OpenAIClientChat", "SummarizerError", "chat_client"]


class SummarizerError(CtxError):
    """A summarizer or selector could not produce a result (endpoint down, timeout, bad reply)."""


class ChatClient(Protocol):
    """What a summarizer or selector calls: one completion, and a name for the endpoint in errors."""

    url: str

    def complete(self, messages: list[dict[str, Any]], max_tokens: int) -> str: ...


class _Loop:
    """A private event loop on a daemon thread, where an async client's calls run from sync code.

    One loop for the life of the adapter, so an async client's connection pool
    always lives on the same loop; the compaction filter itself is synchronous.
    """

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()

    def run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                threading.Thread(target=self._loop.run_forever, name="ctxcore-chat-client", daemon=True).start()
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()


def _resolve(result: Any, loop: _Loop) -> Any:
    return loop.run(result) if inspect.iscoroutine(result) else result


def _endpoint_name(client: Any, path: str) -> str:
    base = getattr(client, "base_url", None)
    return f"{str(base).rstrip('/')}/{path}" if base else f"{type(client).__name__}.{path.replace('/', '.')}"


class OpenAIClientChat:
    """``complete`` through ``client.chat.completions.create`` (OpenAI, AsyncOpenAI, AzureOpenAI or look-alikes)."""

    def __init__(self, client: Any, model: str, *, temperature: float = 0.0) -> None:
        self.client = client
        self.model = model
        self.temperature = temperature
        self.url = _endpoint_name(client, "chat/completions")
        self._loop = _Loop()

    def complete(self, messages: list[dict[str, Any]], max_tokens: int) -> str:
        """The assistant text of one completion; the client's own retries apply.

        Raises:
            SummarizerError: the client raised, or the reply has no text; names the endpoint.
        """
        try:
            reply = _resolve(self.client.chat.completions.create(
                model=self.model, messages=messages, max_tokens=max_tokens, temperature=self.temperature), self._loop)
        except Exception as exc:
            raise _error(self.url, exc) from exc
        try:
            content = reply.choices[0].message.content
        except (AttributeError, IndexError, TypeError):
            raise _error(self.url, None, "returned no choices[0].message.content") from None
        if not isinstance(content, str):
            raise _error(self.url, None, "returned non-text content")
        return content.strip()


class AnthropicClientChat:
    """``complete`` through ``client.messages.create`` (Anthropic or AsyncAnthropic); system text goes to ``system``.

    ``temperature`` is sent only when given (in the request body: recent SDKs
    have no such parameter, and recent models choose their own).
    """

    def __init__(self, client: Any, model: str, *, temperature: float | None = None) -> None:
        self.client = client
        self.model = model
        self.temperature = temperature
        self.url = _endpoint_name(client, "v1/messages")
        self._loop = _Loop()

    def complete(self, messages: list[dict[str, Any]], max_tokens: int) -> str:
        """The text blocks of one reply, joined; the client's own retries apply.

        Raises:
            SummarizerError: the client raised, or the reply has no text block; names the endpoint.
        """
        system = "\n\n".join(str(m["content"]) for m in messages if m["role"] == "system")
        turns = [{"role": m["role"], "content": m["content"]} for m in messages if m["role"] != "system"]
        options: dict[str, Any] = {"system": system} if system else {}
        if self.temperature is not None:
            options["extra_body"] = {"temperature": self.temperature}
        try:
            reply = _resolve(self.client.messages.create(model=self.model, max_tokens=max_tokens, messages=turns,
                                                         **options), self._loop)
        except Exception as exc:
            raise _error(self.url, exc) from exc
        texts = [getattr(b, "text", "") for b in getattr(reply, "content", None) or () if getattr(b, "type", "") == "text"]
        if not texts:
            raise _error(self.url, None, "returned no text block")
        return "".join(texts).strip()


def _error(url: str, exc: BaseException | None, detail: str = "") -> SummarizerError:
    if exc is not None:
        status = getattr(exc, "status_code", None)
        detail = f"answered HTTP {status}: {exc}" if status else f"failed: {type(exc).__name__}: {exc}"
    return SummarizerError(f"{url} {detail}"[:500])


def chat_client(client: Any, model: str | None = None, *, temperature: float | None = None) -> ChatClient:
    """The :class:`ChatClient` for ``client``: a ``ChatEndpoint`` as it is, an SDK client wrapped with ``model``.

    ``temperature``: OpenAI clients get 0 unless told (summaries should not
    vary); Anthropic clients get it only when given.

    Raises:
        TypeError: ``client`` is none of these, or an SDK client came without ``model``.
    """
    if callable(getattr(client, "complete", None)) and isinstance(getattr(client, "url", None), str):
        return client  # a ChatEndpoint (or any ChatClient)
    chat = getattr(getattr(client, "chat", None), "completions", None)
    kind = "openai" if callable(getattr(chat, "create", None)) else None
    if kind is None and callable(getattr(getattr(client, "messages", None), "create", None)):
        kind = "anthropic"
    if kind is None:
        raise TypeError(f"{type(client).__name__} is not a chat client: pass a ChatEndpoint, an openai.OpenAI/AsyncOpenAI "
                        "(anything with chat.completions.create) or an anthropic.Anthropic client")
    if not model:
        raise TypeError(f"a {type(client).__name__} client needs model=..., the model name to send")
    if kind == "openai":
        return OpenAIClientChat(client, model, temperature=0.0 if temperature is None else temperature)
    return AnthropicClientChat(client, model, temperature=temperature)
