"""JSON corpora of the ``approximate`` counter's accuracy check, generated from fixed seeds (nothing downloaded).

Each is JSON as agents meet it, in the shapes that tokenize differently:

- json_api: API responses, pretty-printed: chat completions with tool calls,
  issue-tracker listings with nested users, URLs and epoch timestamps, and
  paginated search results with scores;
- json_minified: the same kinds of responses with no whitespace at all
  (``separators=(",", ":")``), one per line, as they come off the wire;
- json_config: deeply nested configuration (services, feature flags, retry
  policies, paths, short keys, booleans, nulls), indented by four;
- json_numbers: number-heavy payloads: embeddings (signed floats of 8-9
  digits), metric time series, matrices with exponents, ids and counters;
- json_unicode: multilingual records written with ``ensure_ascii=True``, so
  Chinese, accented Latin, Cyrillic and emoji arrive as ``\\uXXXX`` escapes
  (surrogate pairs for emoji), half of them pretty and half compact;
- json_camel: JavaScript-style payloads with camelCase keys (``createdAt``,
  ``tokenBudgetId``) nested five deep, half pretty and half minified;
- json_geo: GeoJSON features: coordinate pairs of six-decimal floats;
- json_logs: JSON Lines log events (ISO timestamps with microseconds, dotted
  logger names, snake_case events, durations);
- json_escaped: chat messages whose string values hold Python source and
  help text (standard-library files), so newlines, quotes and indentation
  arrive escaped (``\\n``, ``\\"``).
"""

from __future__ import annotations

import json
import random
import string
import sysconfig
from pathlib import Path
from typing import Any

__all__ = ["JSON_CORPORA", "json_corpus"]

JSON_CORPORA = ("json_api", "json_minified", "json_config", "json_numbers", "json_unicode", "json_camel", "json_geo",
                "json_logs", "json_escaped")

_WORDS = (
    "deploy build cache token budget window history summary filter provider memory thread agent tool result "
    "request response error retry timeout latency region cluster replica primary staging production invoice "
    "customer order refund review draft published archived pending active user admin service worker queue"
).split()
_ZH = "上下文构建模型调用工具结果摘要历史消息预算过滤提供者记忆线程检查点部署配置错误重试超时延迟区域集群副本"
_ACCENTED = "éèêëàâäôöûüçñíóúåøæß"
_CYRILLIC = "абвгдежзийклмнопрстуфхцчшщыэюя"
_EMOJI = "😀🚀✅❌🔥💡📦🧪⚠️🎉"


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(n))


def _ident(rng: random.Random, prefix: str, n: int = 24) -> str:
    return prefix + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(n))


def _chat_completion(rng: random.Random) -> dict[str, Any]:
    calls = [{"id": _ident(rng, "call_"), "type": "function",
              "function": {"name": rng.choice(["read_file", "run_tests", "search_memory", "list_dir"]),
                           "arguments": json.dumps({"path": f"src/{rng.choice(_WORDS)}/{rng.choice(_WORDS)}.py",
                                                    "limit": rng.randint(1, 500)})}}
             for _ in range(rng.randint(0, 2))]
    return {
        "id": _ident(rng, "chatcmpl-", 29), "object": "chat.completion", "created": rng.randint(1_700_000_000, 1_760_000_000),
        "model": rng.choice(["gpt-4o-2024-08-06", "gpt-4o-mini", "o3-mini"]),
        "choices": [{"index": 0, "message": {"role": "assistant", "content": None if calls else _words(rng, 30).capitalize() + ".",
                                             "tool_calls": calls or None, "refusal": None},
                     "logprobs": None, "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": {"prompt_tokens": rng.randint(100, 90000), "completion_tokens": rng.randint(1, 4000),
                  "total_tokens": rng.randint(100, 94000),
                  "prompt_tokens_details": {"cached_tokens": rng.randint(0, 60000), "audio_tokens": 0}},
        "system_fingerprint": f"fp_{rng.getrandbits(40):010x}",
    }


def _user(rng: random.Random) -> dict[str, Any]:
    login = f"{rng.choice(_WORDS)}{rng.randint(1, 999)}"
    return {"login": login, "id": rng.randint(1, 99_999_999), "node_id": _ident(rng, "MDQ6VXNlcj", 12),
            "avatar_url": f"https://avatars.example.com/u/{rng.randint(1, 9_999_999)}?v=4",
            "html_url": f"https://git.example.com/{login}", "type": "User", "site_admin": rng.random() < 0.05}


def _issue(rng: random.Random, number: int) -> dict[str, Any]:
    return {
        "url": f"https://api.git.example.com/repos/acme/agent/issues/{number}", "number": number,
        "title": _words(rng, rng.randint(3, 9)).capitalize(), "state": rng.choice(["open", "closed"]),
        "locked": False, "user": _user(rng), "assignees": [_user(rng) for _ in range(rng.randint(0, 2))],
        "labels": [{"id": rng.randint(1, 10**9), "name": rng.choice(_WORDS), "color": f"{rng.getrandbits(24):06x}",
                    "default": False} for _ in range(rng.randint(0, 3))],
        "comments": rng.randint(0, 40), "created_at": f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T"
        f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}Z",
        "closed_at": None, "body": _words(rng, rng.randint(10, 60)).capitalize() + ".",
        "reactions": {"total_count": rng.randint(0, 9), "+1": rng.randint(0, 5), "-1": 0, "heart": rng.randint(0, 2)},
    }


def _search(rng: random.Random) -> dict[str, Any]:
    return {"object": "list", "query": _words(rng, 4), "took_ms": rng.randint(1, 900), "has_more": rng.random() < 0.5,
            "next_cursor": f"{rng.getrandbits(96):024x}",
            "data": [{"id": f"mem_{rng.getrandbits(64):016x}", "score": round(rng.random(), 6),
                      "namespace": ["users", f"u{rng.randint(1, 999)}", "facts"], "text": _words(rng, rng.randint(6, 20)),
                      "metadata": {"source": rng.choice(["chat", "tool", "import"]), "turn": rng.randint(0, 400)}}
                     for _ in range(rng.randint(2, 6))]}


def _responses(rng: random.Random, n: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(n):
        kind = i % 3
        out.append(_chat_completion(rng) if kind == 0 else _search(rng) if kind == 1 else _issue(rng, 1000 + i))
    return out


def _config(rng: random.Random) -> dict[str, Any]:
    def service(name: str) -> dict[str, Any]:
        return {"name": name, "image": f"registry.example.com/{name}:{rng.randint(1, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 9)}",
                "replicas": rng.randint(1, 12), "enabled": rng.random() < 0.8,
                "env": {f"{rng.choice(_WORDS).upper()}_{rng.choice(_WORDS).upper()}": rng.choice(["true", "false", "0", "info", "/var/lib/app"])
                        for _ in range(rng.randint(2, 6))},
                "resources": {"limits": {"cpu": f"{rng.randint(100, 4000)}m", "memory": f"{rng.randint(128, 8192)}Mi"},
                              "requests": {"cpu": f"{rng.randint(50, 1000)}m", "memory": f"{rng.randint(64, 2048)}Mi"}},
                "retry": {"max_attempts": rng.randint(1, 8), "backoff": {"initial": 0.5, "multiplier": 2, "max": 30}, "on": [429, 500, 502, 503]},
                "healthcheck": {"path": "/healthz", "interval_s": 10, "timeout_s": 2, "unhealthy_after": 3},
                "volumes": [{"name": rng.choice(_WORDS), "mount": f"/data/{rng.choice(_WORDS)}", "read_only": rng.random() < 0.5}
                            for _ in range(rng.randint(0, 3))],
                "depends_on": rng.sample(_WORDS, rng.randint(0, 3)), "owner": None}

    return {"version": 3, "project": {"name": "acme-agents", "region": rng.choice(["eu-west-1", "us-east-2"]), "tier": "prod"},
            "services": [service(f"{rng.choice(_WORDS)}-{rng.choice(_WORDS)}") for _ in range(rng.randint(3, 6))],
            "features": {rng.choice(_WORDS): {"enabled": rng.random() < 0.5, "rollout": rng.randint(0, 100), "cohorts": rng.sample(_WORDS, 2)}
                         for _ in range(8)},
            "logging": {"level": "info", "format": "json", "sinks": [{"type": "stderr"}, {"type": "file", "path": "/var/log/agent.jsonl", "rotate_mb": 64}]}}


def _numbers(rng: random.Random) -> dict[str, Any]:
    return {
        "embedding": {"model": "text-embedding-3-small", "dims": 64, "vector": [round(rng.gauss(0, 0.08), 9) for _ in range(64)]},
        "series": [{"t": 1_733_000_000 + 60 * i, "p50": round(rng.uniform(10, 900), 3), "p99": round(rng.uniform(900, 9000), 2),
                    "count": rng.randint(0, 100_000), "errors": rng.randint(0, 30)} for i in range(12)],
        "matrix": [[float(f"{rng.uniform(-1, 1) * 10 ** rng.randint(-8, 8):.6e}") for _ in range(6)] for _ in range(4)],
        "ids": [rng.randint(10**11, 10**13) for _ in range(10)], "ratio": rng.random(), "offset": -rng.randint(1, 10**6),
    }


def _multilingual(rng: random.Random) -> dict[str, Any]:
    def zh(n: int) -> str:
        return "".join(rng.choice(_ZH) for _ in range(n))

    return {"id": rng.randint(1, 10**6), "title": zh(rng.randint(4, 12)),
            "author": {"name": "".join(rng.choice(_ACCENTED + "abcdefghij") for _ in range(8)).title(), "city": rng.choice(["Zürich", "São Paulo", "Kraków", "Москва", "東京"])},
            "summary": zh(rng.randint(20, 60)) + "。", "ru": "".join(rng.choice(_CYRILLIC + " ") for _ in range(rng.randint(20, 50))),
            "reactions": "".join(rng.choice(_EMOJI) for _ in range(rng.randint(1, 5))),
            "tags": [zh(2) for _ in range(rng.randint(1, 4))], "score": round(rng.random() * 5, 2)}


def _camel(rng: random.Random, depth: int) -> Any:
    if depth == 0:
        return rng.choice([rng.randint(0, 99999), rng.random() < 0.5, None, rng.choice(_WORDS), f"{rng.choice(_WORDS)}-{rng.randint(1, 99)}"])
    if rng.random() < 0.7:
        return {rng.choice(_WORDS) + rng.choice(_WORDS).title() + rng.choice(["", "Id", "At", "Count", "Url"]): _camel(rng, depth - 1)
                for _ in range(rng.randint(1, 4))}
    return [_camel(rng, depth - 1) for _ in range(rng.randint(1, 3))]


def _geo(rng: random.Random) -> dict[str, Any]:
    ring = [[round(rng.uniform(-180, 180), 6), round(rng.uniform(-90, 90), 6)] for _ in range(rng.randint(4, 16))]
    return {"type": "Feature", "geometry": {"type": "Polygon", "coordinates": [ring]},
            "properties": {"name": rng.choice(_WORDS).title(), "population": rng.randint(0, 10**7)}}


def _log_event(rng: random.Random, i: int) -> dict[str, Any]:
    return {"timestamp": f"2025-06-{1 + i // 1440 % 28:02d}T{i // 60 % 24:02d}:{i % 60:02d}:{rng.randint(0, 59):02d}.{rng.randint(0, 999999):06d}Z",
            "level": rng.choice(["info", "debug", "warning"]), "event": f"{rng.choice(_WORDS)}_{rng.choice(_WORDS)}",
            "logger": f"ctxcore.{rng.choice(_WORDS)}", "duration_ms": round(rng.random() * 100, 3), "thread_id": f"{rng.getrandbits(64):016x}"}


def _escaped(rng: random.Random) -> list[dict[str, Any]]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    texts = [(stdlib / p).read_text(encoding="utf-8") for p in _ESCAPED_SOURCES]
    out = []
    for i in range(24):
        text = texts[i % len(texts)]
        start = rng.randrange(0, max(1, len(text) - 900))
        role = "tool" if i % 2 else "assistant"
        out.append({"role": role, "content": text[start:start + 900], **({"tool_call_id": _ident(rng, "call_")} if role == "tool" else {})})
    return out


#: standard-library files whose text the json_escaped corpus carries: source, and reStructuredText help topics
#: (fixed for a Python version, like the python corpus; nothing of this repository, so editing docs moves nothing)
_ESCAPED_SOURCES = ("email/message.py", "http/client.py", "pydoc_data/topics.py")


def json_corpus(name: str) -> str:
    """The text of JSON corpus ``name`` (one of :data:`JSON_CORPORA`), the same on every run."""
    rng = random.Random(JSON_CORPORA.index(name) + 33)
    if name == "json_api":
        return "\n".join(json.dumps(r, indent=2) for r in _responses(rng, 24)) + "\n"
    if name == "json_minified":
        return "\n".join(json.dumps(r, separators=(",", ":")) for r in _responses(rng, 36)) + "\n"
    if name == "json_config":
        return "\n".join(json.dumps(_config(rng), indent=4) for _ in range(4)) + "\n"
    if name == "json_numbers":
        docs = [_numbers(rng) for _ in range(8)]
        return "\n".join(json.dumps(d, indent=2) if i % 2 else json.dumps(d) for i, d in enumerate(docs)) + "\n"
    if name == "json_unicode":
        docs = [_multilingual(rng) for _ in range(40)]
        return "\n".join(json.dumps(d, indent=2) if i % 2 else json.dumps(d) for i, d in enumerate(docs)) + "\n"
    if name == "json_camel":
        docs = [_camel(rng, 5) for _ in range(40)]
        return "\n".join(json.dumps(d, indent=2) if i % 2 else json.dumps(d, separators=(",", ":")) for i, d in enumerate(docs)) + "\n"
    if name == "json_geo":
        return json.dumps({"type": "FeatureCollection", "features": [_geo(rng) for _ in range(30)]}, indent=2) + "\n"
    if name == "json_logs":
        return "\n".join(json.dumps(_log_event(rng, i)) for i in range(200)) + "\n"
    if name == "json_escaped":
        return "\n".join(json.dumps(m) for m in _escaped(rng)) + "\n"
    raise KeyError(f"unknown JSON corpus {name!r}; choose from {', '.join(JSON_CORPORA)}")
