"""The contract against the real ``mem0ai`` library, running locally and offline.

mem0's ``Memory`` needs an embedder, a vector store and (for ``infer``) an
LLM. Here the vector store is Qdrant's embedded mode (files under the test's
directory) and the embedder is mem0's ``openai`` provider pointed at a small
HTTP server on 127.0.0.1 that speaks OpenAI's embeddings protocol (hashed
bag-of-words vectors): nothing leaves the machine and no model weights are
needed. For ``infer: true`` the same server answers mem0's chat-completions
call, "extracting" each sentence the user wrote. mem0ai is an optional, large install: these tests are skipped when it
is missing; ``make test-mem0`` installs it and runs them.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import tempfile
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

# mem0 reads these when it is imported: no telemetry, and its home under a temporary directory.
os.environ["MEM0_TELEMETRY"] = "false"
os.environ.setdefault("MEM0_DIR", tempfile.mkdtemp(prefix="ctxcore-mem0-"))
mem0 = pytest.importorskip("mem0", reason="mem0ai is not installed (make test-mem0 installs it)")

from ctxcore_memory_mem0 import Mem0Config, Mem0MemoryStore, create_client  # noqa: E402

from ctxcore.testing.contracts.memory_store import MemoryStoreContract  # noqa: E402
from ctxcore.testing.harness.memory_recall import recall_at_k  # noqa: E402

DIMS = 512


def _embed(text: str) -> list[float]:
    vector = [0.0] * DIMS
    for word in re.findall(r"\w+", text.lower()):
        vector[int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "big") % DIMS] += 1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]


def _extract_facts(prompt: str) -> list[str]:
    """What the chat stub "extracts": each sentence the user wrote in the prompt's New Messages section."""
    section = prompt.split("## New Messages\n", 1)[-1].split("\n## ", 1)[0]
    facts = []
    for line in section.splitlines():
        if line.startswith("user: "):
            facts += [s for s in re.split(r"(?<=[.!?])\s+", line[len("user: "):].strip()) if s]
    return facts


CHAT_CALLS: list[dict[str, Any]] = []


class _OpenAIStub(BaseHTTPRequestHandler):
    """POST /v1/embeddings and /v1/chat/completions as OpenAI answers them; anything else is a 404."""

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path.rstrip("/").endswith("/chat/completions"):
            CHAT_CALLS.append(body)
            facts = _extract_facts(body["messages"][-1]["content"])
            status, answer = 200, {
                "id": f"chatcmpl-{len(CHAT_CALLS)}", "object": "chat.completion", "created": 0, "model": body["model"],
                "choices": [{"index": 0, "finish_reason": "stop", "message": {
                    "role": "assistant", "content": json.dumps({"memory": [{"text": f} for f in facts]})}}],
                "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
            }
        elif self.path.rstrip("/").endswith("/embeddings"):
            inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
            status, answer = 200, {
                "object": "list", "model": body.get("model", "stub"),
                "data": [{"object": "embedding", "index": i, "embedding": _embed(t)} for i, t in enumerate(inputs)],
                "usage": {"prompt_tokens": 0, "total_tokens": 0},
            }
        else:
            status, answer = 404, {"error": {"message": f"{self.path} is not served by the test stub", "type": "invalid_request_error"}}
        payload = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def embeddings_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _OpenAIStub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def mem0_config(path: Path, url: str) -> dict[str, Any]:
    """A local, offline mem0 configuration: stub embedder, embedded Qdrant, SQLite history."""
    return {
        "embedder": {"provider": "openai", "config": {"model": "stub", "api_key": "sk-local", "openai_base_url": url,
                                                      "embedding_dims": DIMS}},
        "llm": {"provider": "openai", "config": {"model": "stub", "api_key": "sk-local", "openai_base_url": url}},
        "vector_store": {"provider": "qdrant", "config": {"path": str(path / "qdrant"), "collection_name": "ctx",
                                                          "embedding_model_dims": DIMS, "on_disk": True}},
        "history_db_path": str(path / "history.db"),
    }


class TestRealMem0Contract(MemoryStoreContract):
    """The contract over mem0.Memory itself (infer: false: no LLM involved)."""

    supports_ids = False

    @pytest.fixture(autouse=True)
    def _url(self, embeddings_url: str) -> Iterator[None]:
        self.url = embeddings_url
        self.open: dict[Path, Any] = {}
        yield
        for client in self.open.values():
            _close(client)

    def make_store(self, path: Path) -> Mem0MemoryStore:
        # Embedded Qdrant lets one client open a directory at a time: opening the
        # same directory again first closes the earlier client, as a restart would.
        if path in self.open:
            _close(self.open.pop(path))
        client = self.open[path] = create_client(Mem0Config(config=mem0_config(path, self.url), infer=False))
        return Mem0MemoryStore(client, infer=False)


def _close(client: Any) -> None:
    """Release a mem0 Memory's history database and its embedded Qdrant directory."""
    client.close()
    client.vector_store.client.close()


def test_infer_extracts_facts_through_the_llm(tmp_path: Path, embeddings_url: str) -> None:
    """infer: true sends the conversation to mem0's LLM (the chat stub) and records the facts it returns."""
    store = Mem0MemoryStore(create_client(Mem0Config(config=mem0_config(tmp_path, embeddings_url))), infer=True)
    calls = len(CHAT_CALLS)
    items = store.record([{"role": "user", "content": "I moved to Porto last year. I work remotely for Northwind."},
                          {"role": "assistant", "content": "Thanks, noted."}], namespace="priya")
    assert len(CHAT_CALLS) == calls + 1 and CHAT_CALLS[-1]["response_format"] == {"type": "json_object"}
    assert sorted(i.content for i in items) == ["I moved to Porto last year.", "I work remotely for Northwind."]
    assert store.retrieve("where does she live? Porto", limit=1, namespace="priya")[0].content == "I moved to Porto last year."
    assert store.retrieve("Porto", namespace="someone-else") == []


def test_recall_on_the_labelled_set(tmp_path: Path, embeddings_url: str) -> None:
    """Real mem0 with the bag-of-words stub embedder answers most of the labelled questions."""
    store = Mem0MemoryStore(create_client(Mem0Config(config=mem0_config(tmp_path, embeddings_url))), infer=False)
    assert recall_at_k(store, k=5).recall >= 0.6
