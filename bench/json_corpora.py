"""JSON corpora for the ``approximate`` counter, generated from fixed seeds (nothing is shipped).

Each generator returns the same text on every run and every machine: a
``random.Random`` with its own seed, ``json.dumps`` with fixed options. The
shapes are the JSON an agent's context really holds:

- ``json_documents``: search results: prose with escaped line breaks and quotes, URLs, Markdown;
- ``json_config``: nested configuration with camelCase keys, booleans, nulls, deep indentation;
- ``json_minified``: one long minified API response with camelCase keys and URLs;
- ``json_numbers``: metrics and time series: floats, exponents, negatives, long integers;
- ``json_escaped``: ``ensure_ascii`` output: ``\\uXXXX`` escapes of Chinese, accented and Cyrillic
  text, emoji as escaped surrogate pairs;
- ``json_unicode``: the same kind of content written raw (``ensure_ascii=False``), emoji included;
- ``json_binary``: base64 payloads, sha256/sha1 digests, UUIDs, JWTs;
- ``json_logs``: JSON-lines structured logs (levels, trace ids, durations, messages).

Held out (checked, never fitted on):

- ``heldout_openapi``: an OpenAPI document (``$ref``, descriptions, schemas);
- ``heldout_chat``: chat transcripts with tool calls whose arguments are JSON inside a JSON string;
- ``heldout_geo``: GeoJSON features (coordinate arrays, escaped place names).
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import uuid
from collections.abc import Callable

__all__ = ["FITTED", "HELD_OUT", "json_corpus"]

_WORDS = (
    "alpha bravo charlie delta echo river stone cloud garden window market station ticket invoice customer "
    "order shipment pending active archived premium refund review draft published warning error success "
    "timeout retry latency region cluster replica primary request response payment account session token "
    "service deployment container network storage backup schedule notification profile settings"
).split()
_CAMEL = (
    "userId createdAt updatedAt displayName isActive maxRetries timeoutMs baseUrl apiVersion accessToken "
    "refreshToken pageSize nextPageToken totalCount lastModifiedBy ownerEmail billingAddress postalCode "
    "countryCode phoneNumber avatarUrl followersCount enableLogging retryBackoffMs healthCheckPath "
    "replicaCount memoryLimit cpuRequest imagePullPolicy serviceAccountName readinessProbe"
).split()
_CHINESE = ("用户", "订单", "支付成功", "配置文件", "服务器", "数据库连接失败", "请稍后重试", "北京市朝阳区", "上海", "深圳")
_ACCENTED = ("café", "Zürich", "São Paulo", "naïve", "Ångström", "Malmö", "Kraków", "résumé", "Ñandú", "Łódź")
_CYRILLIC = ("Москва", "привет", "заказ", "пользователь", "ошибка", "Санкт-Петербург")
_EMOJI = ("😀", "🚀", "✅", "🔥", "🎉", "👍", "📦", "⚠️", "🇺🇸", "🙂")


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(n))


def _stamp(rng: random.Random) -> str:
    return (f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:"
            f"{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}.{rng.randint(0, 999):03d}Z")


def _documents() -> str:
    rng = random.Random(5)
    hits = [{"url": f"https://docs.example.com/{rng.choice(_WORDS)}/{rng.choice(_WORDS)}-{rng.choice(_WORDS)}",
             "title": _words(rng, rng.randint(3, 7)).title(), "score": round(rng.random(), 4),
             "snippet": "\n".join(_words(rng, rng.randint(6, 18)).capitalize() + "." for _ in range(rng.randint(1, 4)))
             + f' See "{rng.choice(_WORDS)}" and `{rng.choice(_CAMEL)}()`.',
             "headings": [f"## {_words(rng, 2).title()}" for _ in range(rng.randint(1, 3))]} for _ in range(60)]
    return json.dumps({"query": _words(rng, 4), "hits": hits[:35]}, indent=2) + "\n" + "\n".join(json.dumps(h) for h in hits[35:]) + "\n"


def _config_node(rng: random.Random, depth: int) -> dict:
    node: dict = {}
    for key in rng.sample(_CAMEL, rng.randint(3, 6)):
        roll = rng.random()
        if depth < 4 and roll < 0.3:
            node[key] = _config_node(rng, depth + 1)
        elif roll < 0.45:
            node[key] = rng.choice([True, False, None])
        elif roll < 0.65:
            node[key] = rng.choice([rng.randint(0, 100), rng.randint(1000, 65535), round(rng.random(), 2)])
        elif roll < 0.8:
            node[key] = [f"{rng.choice(_WORDS)}-{rng.choice(_WORDS)}" for _ in range(rng.randint(1, 4))]
        else:
            node[key] = rng.choice([f"https://{rng.choice(_WORDS)}.example.com/{rng.choice(_WORDS)}/v{rng.randint(1, 3)}",
                                    f"/etc/{rng.choice(_WORDS)}/{rng.choice(_WORDS)}.yaml", _words(rng, 3)])
    return node


def _config() -> str:
    rng = random.Random(11)
    parts = [json.dumps({"apiVersion": "v2", "services": [_config_node(rng, 0) for _ in range(12)]}, indent=4),
             json.dumps({"environments": {w: _config_node(rng, 1) for w in rng.sample(_WORDS, 8)}}, indent=2)]
    return "\n".join(parts) + "\n"


def _user(rng: random.Random) -> dict:
    name = rng.choice(_WORDS)
    return {"userId": rng.randint(10**5, 10**9), "displayName": f"{name.title()} {rng.choice(_WORDS).title()}",
            "avatarUrl": f"https://cdn.example.com/avatars/{rng.getrandbits(64):016x}.png",
            "isActive": rng.random() < 0.8, "followersCount": rng.randint(0, 250_000),
            "profileUrl": f"https://api.example.com/v3/users/{name}{rng.randint(1, 999)}", "createdAt": _stamp(rng)}


def _minified() -> str:
    rng = random.Random(17)
    items = [{"postId": f"p_{rng.getrandbits(40):010x}", "author": _user(rng), "title": _words(rng, rng.randint(3, 8)).title(),
              "likeCount": rng.randint(0, 9999), "commentCount": rng.randint(0, 500),
              "tags": rng.sample(_WORDS, rng.randint(1, 4)), "isPinned": rng.random() < 0.1,
              "links": {"self": f"/v3/posts/{rng.randint(1, 10**6)}", "comments": f"/v3/posts/{rng.randint(1, 10**6)}/comments"}}
             for _ in range(70)]
    body = {"data": items, "meta": {"totalCount": 7000, "pageSize": 70, "nextPageToken": f"{rng.getrandbits(120):030x}"}}
    return json.dumps(body, separators=(",", ":")) + "\n"


def _numbers() -> str:
    rng = random.Random(23)
    series = [{"metric": f"{rng.choice(_WORDS)}.{rng.choice(['p50', 'p95', 'p99', 'count', 'rate'])}",
               "unit": rng.choice(["ms", "bytes", "percent", "ops"]),
               "points": [[1_733_000_000 + 60 * k, round(rng.lognormvariate(3, 1.5), rng.choice([1, 3, 6]))]
                          for k in range(rng.randint(8, 20))],
               "stats": {"min": rng.uniform(-50, 0), "max": rng.uniform(100, 1e6), "mean": rng.gauss(0, 1e3),
                         "stddev": rng.random() * 1e-3, "count": rng.randint(0, 2**40)}} for _ in range(30)]
    matrix = [[round(rng.gauss(0, 1), 4) for _ in range(12)] for _ in range(30)]
    return json.dumps({"series": series[:15]}, indent=2) + "\n" + json.dumps({"series": series[15:], "embedding": matrix}) + "\n"


def _text_value(rng: random.Random) -> str:
    pick = rng.random()
    if pick < 0.35:
        return rng.choice(_CHINESE) + rng.choice(["，", "。", "：", " "]) + rng.choice(_CHINESE)
    if pick < 0.55:
        return f"{rng.choice(_ACCENTED)} {_words(rng, 2)}"
    if pick < 0.7:
        return f"{rng.choice(_CYRILLIC)} {rng.choice(_CYRILLIC)}"
    return f"{_words(rng, rng.randint(2, 6)).capitalize()} {rng.choice(_EMOJI)}"


def _localized(rng: random.Random) -> list[dict]:
    return [{"id": rng.randint(1, 10**6), "title": _text_value(rng), "description": _text_value(rng) + " " + _text_value(rng),
             "city": rng.choice(_ACCENTED + _CHINESE[-3:]), "reaction": rng.choice(_EMOJI), "score": round(rng.random() * 5, 1)}
            for _ in range(90)]


def _escaped() -> str:
    rng = random.Random(29)
    rows = _localized(rng)
    return json.dumps({"results": rows[:45]}, indent=2) + "\n" + "\n".join(json.dumps(r) for r in rows[45:]) + "\n"


def _unicode() -> str:
    rng = random.Random(31)
    rows = _localized(rng)
    return (json.dumps({"results": rows[:45]}, indent=2, ensure_ascii=False) + "\n"
            + "\n".join(json.dumps(r, ensure_ascii=False) for r in rows[45:]) + "\n")


def _jwt(rng: random.Random) -> str:
    def part(obj: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()

    sig = base64.urlsafe_b64encode(rng.randbytes(32)).rstrip(b"=").decode()
    return f"{part({'alg': 'HS256', 'typ': 'JWT'})}.{part({'sub': rng.randint(1, 10**6), 'iat': 1_733_000_000})}.{sig}"


def _binary() -> str:
    rng = random.Random(37)
    rows = [{"id": str(uuid.UUID(int=rng.getrandbits(128), version=4)), "name": f"{rng.choice(_WORDS)}-{rng.randint(1, 99)}.bin",
             "sha256": hashlib.sha256(rng.randbytes(16)).hexdigest(), "etag": f'"{hashlib.sha1(rng.randbytes(8)).hexdigest()}"',
             "size": rng.randint(100, 10**8), "contentType": rng.choice(["image/png", "application/pdf", "application/octet-stream"]),
             "data": base64.b64encode(rng.randbytes(rng.randint(24, 180))).decode(), "token": _jwt(rng)}
            for _ in range(40)]
    return json.dumps({"files": rows[:25]}, indent=2) + "\n" + "\n".join(json.dumps(r) for r in rows[25:]) + "\n"


def _logs() -> str:
    rng = random.Random(41)
    lines = []
    for _ in range(220):
        level = rng.choice(["debug", "info", "info", "info", "warning", "error"])
        event = {"ts": _stamp(rng), "level": level, "logger": f"app.{rng.choice(_WORDS)}.{rng.choice(_WORDS)}",
                 "msg": _words(rng, rng.randint(3, 9)), "traceId": f"{rng.getrandbits(128):032x}",
                 "spanId": f"{rng.getrandbits(64):016x}", "durationMs": round(rng.expovariate(0.02), 3),
                 "status": rng.choice([200, 200, 201, 204, 400, 404, 500, 503])}
        if level == "error":
            event["error"] = {"type": rng.choice(["TimeoutError", "ValueError", "ConnectionResetError"]),
                              "message": _words(rng, 6), "retryable": rng.random() < 0.5}
        lines.append(json.dumps(event))
    return "\n".join(lines) + "\n"


def _schema(rng: random.Random, name: str) -> dict:
    props = {}
    for key in rng.sample(_CAMEL, rng.randint(3, 7)):
        kind = rng.choice(["string", "integer", "boolean", "array", "ref"])
        if kind == "ref":
            props[key] = {"$ref": f"#/components/schemas/{rng.choice(_WORDS).title()}"}
        elif kind == "array":
            props[key] = {"type": "array", "items": {"type": "string"}, "maxItems": rng.randint(1, 100)}
        else:
            props[key] = {"type": kind, "description": _words(rng, rng.randint(4, 12)).capitalize() + "."}
    return {"type": "object", "title": name, "required": sorted(rng.sample(sorted(props), 2)), "properties": props}


def _openapi() -> str:
    rng = random.Random(43)
    paths = {}
    for _ in range(14):
        resource = rng.choice(_WORDS)
        paths[f"/v1/{resource}s/{{{resource}Id}}"] = {
            method: {"operationId": f"{method}{resource.title()}", "summary": _words(rng, 5).capitalize(),
                     "parameters": [{"name": f"{resource}Id", "in": "path", "required": True, "schema": {"type": "string"}}],
                     "responses": {"200": {"description": "OK", "content": {"application/json": {
                         "schema": {"$ref": f"#/components/schemas/{resource.title()}"}}}},
                         "404": {"description": "Not found"}}}
            for method in rng.sample(["get", "put", "delete", "patch"], 2)}
    schemas = {w.title(): _schema(rng, w.title()) for w in rng.sample(_WORDS, 14)}
    doc = {"openapi": "3.1.0", "info": {"title": "Example API", "version": "1.4.2"}, "paths": paths,
           "components": {"schemas": schemas}}
    return json.dumps(doc, indent=2) + "\n"


def _chat() -> str:
    rng = random.Random(47)
    conversations = []
    for c in range(12):
        messages: list[dict] = [{"role": "system", "content": "You are a helpful assistant.\nAnswer briefly."}]
        for _ in range(4):
            call_id = f"call_{base64.b64encode(rng.randbytes(18)).decode().replace('/', 'x').replace('+', 'y')}"
            args = {"query": _words(rng, 4), "limit": rng.randint(1, 50), "filters": {"status": rng.choice(_WORDS)}}
            messages += [
                {"role": "user", "content": f"{_words(rng, rng.randint(5, 15)).capitalize()}? \"{rng.choice(_WORDS)}\""},
                {"role": "assistant", "content": None, "tool_calls": [{"id": call_id, "type": "function", "function": {
                    "name": f"search_{rng.choice(_WORDS)}", "arguments": json.dumps(args)}}]},
                {"role": "tool", "tool_call_id": call_id, "content": json.dumps({"results": [_words(rng, 6) for _ in range(3)]})},
                {"role": "assistant", "content": f"{_words(rng, 12).capitalize()}.\n\n- {_words(rng, 5)}\n- {_words(rng, 5)}"},
            ]
        conversations.append({"id": f"conv-{c}", "model": "gpt-4o", "messages": messages})
    return json.dumps(conversations[:6], indent=2) + "\n" + "\n".join(json.dumps(c) for c in conversations[6:]) + "\n"


def _geo() -> str:
    rng = random.Random(53)
    features = []
    for _ in range(40):
        lon, lat = rng.uniform(-180, 180), rng.uniform(-60, 70)
        ring = [[round(lon + rng.uniform(-0.1, 0.1), 6), round(lat + rng.uniform(-0.1, 0.1), 6)] for _ in range(rng.randint(4, 9))]
        features.append({"type": "Feature", "id": rng.randint(1, 10**7),
                         "geometry": {"type": "Polygon", "coordinates": [ring + [ring[0]]]},
                         "properties": {"name": rng.choice(_ACCENTED + _CHINESE[-3:] + _CYRILLIC[:1]),
                                        "population": rng.randint(100, 2 * 10**7), "elevation": round(rng.uniform(-5, 3000), 1)}})
    return json.dumps({"type": "FeatureCollection", "features": features[:20]}, indent=2) + "\n" + json.dumps(
        {"type": "FeatureCollection", "features": features[20:]}, separators=(",", ":")) + "\n"


_GENERATORS: dict[str, Callable[[], str]] = {
    "json_documents": _documents, "json_config": _config, "json_minified": _minified, "json_numbers": _numbers,
    "json_escaped": _escaped, "json_unicode": _unicode, "json_binary": _binary, "json_logs": _logs,
    "heldout_openapi": _openapi, "heldout_chat": _chat, "heldout_geo": _geo,
}
FITTED = tuple(name for name in _GENERATORS if name.startswith("json_"))
HELD_OUT = tuple(name for name in _GENERATORS if name.startswith("heldout_"))


def json_corpus(name: str) -> str:
    """The text of the generated JSON corpus ``name`` (one of :data:`FITTED` or :data:`HELD_OUT`)."""
    return _GENERATORS[name]()
