"""Logging (ctxcore.runtime.logging_setup): formats, levels, one handler, and no secret in any log line.

The canary tests run the real ``ctx build`` in a subprocess at ``--log-level
debug`` with secrets placed in the environment (the summarizer's API key), the
pipeline config (a PostgreSQL DSN with a password) and tool output in the state
(``Bearer …`` and ``AIza…``), against a local HTTP server speaking the OpenAI
chat-completions protocol. A control run with redaction switched off through the
private hook proves the debug events do carry every canary, so the redacted
runs can fail.
"""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import structlog
from pydantic import BaseModel

from ctxcore.redaction import DEFAULT_REDACTOR
from ctxcore.runtime import logging_setup
from ctxcore.runtime.logging_setup import configure_logging

ENV_KEY = "sk-CANARYenv0123456789abcdef"
DSN_PASSWORD = "CANARYpgPass77"
TOOL_BEARER = "CANARYbearer0123456789xyz"
TOOL_GOOGLE = "AIzaCANARYgoogle0123456789abcdefXYZ"
TOOL_AWS = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYCANARYAWS1"  # 40 characters, like an AWS secret access key
TOOL_AWS_ENV = "CANARYenvAWSsecret0123456789/abcdefghijk"
QUERY_SECRET = "CANARYquerySecret42"
CANARIES = (ENV_KEY, DSN_PASSWORD, TOOL_BEARER, TOOL_GOOGLE, TOOL_AWS, TOOL_AWS_ENV, QUERY_SECRET)


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    """Each test configures logging itself; put structlog and the root logger back afterwards."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    structlog.reset_defaults()
    root.handlers[:] = handlers
    root.setLevel(level)
    logging_setup._redaction_enabled = True


def _lines(stream: io.StringIO) -> list[str]:
    return [line for line in stream.getvalue().splitlines() if line.strip()]


# ------------------------------------------------------------- in process
class _Db(BaseModel):
    dsn: str
    password: str


def test_json_events_are_redacted_by_key_and_value() -> None:
    """Secret key names lose their value; secret-looking text is replaced in the event, nested values and models."""
    out = io.StringIO()
    configure_logging("debug", "json", out)
    log = structlog.get_logger("test.secrets")
    log.debug(
        f"calling with {ENV_KEY}",
        api_key="plain-looking-value",
        headers={"Authorization": f"Bearer {TOOL_BEARER}", "Accept": "application/json"},
        config=_Db(dsn=f"postgresql://app:{DSN_PASSWORD}@db/agents", password="hunter2"),
        results=[f"found {TOOL_GOOGLE} in a file"],
        total_tokens=42,
    )
    (line,) = _lines(out)
    event = json.loads(line)
    assert event["event"] == "calling with [REDACTED]"
    assert event["api_key"] == "[REDACTED]"
    assert event["headers"] == {"Authorization": "[REDACTED]", "Accept": "application/json"}
    assert event["config"] == {"dsn": "postgresql://[REDACTED]@db/agents", "password": "[REDACTED]"}
    assert event["results"] == ["found [REDACTED] in a file"]
    assert event["total_tokens"] == 42  # counts are not secrets
    assert event["level"] == "debug" and event["logger"] == "test.secrets" and event["timestamp"].endswith("Z")
    assert "plain-looking-value" not in line and "hunter2" not in line


@pytest.mark.parametrize("fmt", ["console", "json"])
def test_exception_text_is_redacted(fmt: str) -> None:
    """An exception is rendered into the event before redaction: a secret in its message never shows."""
    out = io.StringIO()
    configure_logging("debug", fmt, out)
    try:
        raise RuntimeError(f"cannot reach postgresql://app:{DSN_PASSWORD}@db/agents with key {ENV_KEY}")
    except RuntimeError:
        structlog.get_logger("test").exception("connect_failed")
    text = out.getvalue()
    assert "RuntimeError" in text and "Traceback" in text and "[REDACTED]" in text
    for canary in (DSN_PASSWORD, ENV_KEY):
        assert canary not in text
    if fmt == "json":
        assert "RuntimeError" in json.loads(_lines(out)[0])["exception"]


@pytest.mark.parametrize("fmt", ["console", "json"])
def test_stdlib_logging_goes_through_the_same_redaction(fmt: str) -> None:
    """A library logging through ``logging`` (psycopg, urllib3 ...) gets the same format and redaction."""
    out = io.StringIO()
    configure_logging("info", fmt, out)
    logging.getLogger("psycopg.pool").warning("error connecting to %s", f"postgresql://app:{DSN_PASSWORD}@db/x")
    try:
        raise ValueError(f"Authorization: Bearer {TOOL_BEARER}")
    except ValueError:
        logging.getLogger("urllib3").exception("request failed")
    text = out.getvalue()
    assert "error connecting to postgresql://[REDACTED]@db/x" in text and "ValueError" in text
    assert DSN_PASSWORD not in text and TOOL_BEARER not in text
    if fmt == "json":
        events = [json.loads(line) for line in _lines(out) if line.startswith("{")]
        assert [e["logger"] for e in events] == ["psycopg.pool", "urllib3"]
        assert events[0]["level"] == "warning"


def test_configure_is_idempotent_and_levels_filter() -> None:
    """Configuring twice leaves one handler (each record printed once); the level filters both kinds of logger."""
    first, second = io.StringIO(), io.StringIO()
    configure_logging("debug", "json", first)
    configure_logging("warning", "json", second)
    marked = [h for h in logging.getLogger().handlers if getattr(h, "_ctxcore_handler", False)]
    assert len(marked) == 1
    logging.getLogger("lib").warning("once")
    logging.getLogger("lib").info("filtered")
    structlog.get_logger("ctx").info("filtered too")
    structlog.get_logger("ctx").error("shown")
    assert first.getvalue() == ""
    assert [json.loads(line)["event"] for line in _lines(second)] == ["once", "shown"]


def test_bad_level_and_format_are_named() -> None:
    with pytest.raises(ValueError, match="unknown log level 'loud'; use one of debug, info, warning, error"):
        configure_logging("loud")
    with pytest.raises(ValueError, match="unknown log format 'xml'; use one of console, json"):
        configure_logging("info", "xml")


def test_extended_rules_apply() -> None:
    """A deployment's own key names and patterns (Redactor.extended) are used by the log set-up."""
    out = io.StringIO()
    configure_logging("info", "json", out, redactor=DEFAULT_REDACTOR.extended(key_names=["session"], value_patterns=[r"acme-[0-9]{6}"]))
    structlog.get_logger().info("ticket acme-123456", session="abc", user="ann")
    event = json.loads(_lines(out)[0])
    assert event["event"] == "ticket [REDACTED]" and event["session"] == "[REDACTED]" and event["user"] == "ann"


# ------------------------------------------------------ subprocess canaries
class _ChatServer(ThreadingHTTPServer):
    requests: list[dict[str, Any]]
    headers_seen: list[dict[str, str]]


class _Handler(BaseHTTPRequestHandler):
    server: _ChatServer

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append(body)
        self.server.headers_seen.append(dict(self.headers))
        reply = {
            "id": "chatcmpl-1", "object": "chat.completion", "model": body["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "The user asked for a file listing."}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 8, "total_tokens": 18},
        }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
        return


@pytest.fixture
def chat_server() -> Iterator[_ChatServer]:
    server = _ChatServer(("127.0.0.1", 0), _Handler)
    server.requests, server.headers_seen = [], []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _project(tmp_path: Path, server: _ChatServer) -> tuple[Path, Path]:
    pipeline = tmp_path / "pipeline.yaml"
    pipeline.write_text(
        f"""version: 1
model: {{context_window: 4000}}
providers:
  - {{type: static_prompt, text: "You are terse."}}
  - history
filters:
  - type: compaction
    max_tokens: 400
    trigger_ratio: 0.5
    target_ratio: 0.3
    on_overflow: warn
    steps: [{{kind: summarize}}]
    summarizer: {{type: openai_chat, base_url: "http://127.0.0.1:{server.server_address[1]}/v1", model: small, timeout: 10}}
checkpointer:
  type: postgres
  dsn: postgresql://app:{DSN_PASSWORD}@127.0.0.1:1/agents?application_name=ctx&sslpassword={QUERY_SECRET}
""",
        encoding="utf-8",
    )
    tool_output = (f"$ env | grep -i auth\nAuthorization: Bearer {TOOL_BEARER}\nGOOGLE_KEY={TOOL_GOOGLE}\n"
                   f"AWS_SECRET_ACCESS_KEY={TOOL_AWS_ENV}\n$ cat ~/.aws/credentials\naws_secret_access_key = {TOOL_AWS}\n"
                   + "line of output\n" * 80)
    state = {
        "messages": [
            {"role": "user", "content": "Show me the environment of the deploy job."},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "shell", "arguments": "{\"cmd\": \"env\"}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": tool_output},
            {"role": "assistant", "content": "Those are the job's variables."},
            {"role": "user", "content": "Thanks. Now list the files."},
            {"role": "assistant", "content": "README.md and src/."},
            {"role": "user", "content": "Which one is bigger?"},
        ]
    }
    state_file = tmp_path / "state.json"
    state_file.write_text(json.dumps(state), encoding="utf-8")
    return pipeline, state_file


def _run_build(tmp_path: Path, server: _ChatServer, fmt: str, *, redaction: bool = True) -> subprocess.CompletedProcess[str]:
    pipeline, state = _project(tmp_path, server)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXCORE_")}
    env["OPENAI_API_KEY"] = ENV_KEY
    args = ["--log-level", "debug", "--log-format", fmt, "build", str(pipeline), "--state", str(state)]
    if redaction:
        command = [sys.executable, "-m", "ctxcore", *args]
    else:  # the private hook, in a fresh interpreter: same CLI, redaction off
        code = "import ctxcore.runtime.logging_setup as s; s._redaction_enabled = False; from ctxcore.cli import main; main()"
        command = [sys.executable, "-c", code, *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)


def test_debug_events_carry_the_canaries_without_redaction(tmp_path: Path, chat_server: _ChatServer) -> None:
    """Control: with redaction off, the config and header canaries do reach the debug events (so the test below
    can fail), while the tool-output canaries, sent in the summarizer's request body, never do: a body is logged
    only as its size and a preview."""
    result = _run_build(tmp_path, chat_server, "json", redaction=False)
    assert result.returncode == 0, result.stderr
    assert chat_server.headers_seen and chat_server.headers_seen[0]["Authorization"] == f"Bearer {ENV_KEY}"
    for canary in (ENV_KEY, DSN_PASSWORD, QUERY_SECRET):
        assert canary in result.stderr, canary
    sent = json.dumps(chat_server.requests)
    for canary in (TOOL_BEARER, TOOL_GOOGLE, TOOL_AWS, TOOL_AWS_ENV):
        assert canary in sent and canary not in result.stderr, canary
    request = next(json.loads(line) for line in result.stderr.splitlines() if '"chat_request"' in line)
    assert request["body"]["bytes"] > 0 and len(request["body"]["preview"]) <= 200
    events = {json.loads(line)["event"] for line in result.stderr.splitlines()}
    assert {"pipeline_loaded", "chat_request"} <= events


@pytest.mark.parametrize("fmt", ["console", "json"])
def test_no_canary_in_any_log_line(tmp_path: Path, chat_server: _ChatServer, fmt: str) -> None:
    """`ctx build --log-level debug`: secrets from the environment, the pipeline and tool output never reach a log line."""
    result = _run_build(tmp_path, chat_server, fmt)
    assert result.returncode == 0, result.stderr
    assert chat_server.requests, "the summarizer endpoint was not called: the chat_request event was not exercised"
    lines = result.stderr.splitlines()
    assert any("pipeline_loaded" in line for line in lines) and any("chat_request" in line for line in lines)
    for canary in CANARIES:
        assert canary not in result.stderr, canary
    assert "[REDACTED]" in result.stderr
    if fmt == "json":
        for line in lines:
            event = json.loads(line)
            assert {"event", "level", "timestamp"} <= set(event)
    json.loads(result.stdout)  # stdout holds only the request, never a log line


# ------------------------------------------------------------ CLI options
def _ctx(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXCORE_")}
    return subprocess.run([sys.executable, "-m", "ctxcore", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_verbose_shortcut_and_log_level_precedence(tmp_path: Path) -> None:
    """-vv means debug; an explicit --log-level wins over -v; the default (warning) shows no debug event."""
    (tmp_path / "p.yaml").write_text("version: 1\nproviders: [history]\n", encoding="utf-8")
    assert "pipeline_loaded" in _ctx("-vv", "pipeline", "validate", "p.yaml", cwd=tmp_path).stderr
    assert "pipeline_loaded" not in _ctx("-v", "pipeline", "validate", "p.yaml", cwd=tmp_path).stderr
    assert "pipeline_loaded" not in _ctx("-vv", "--log-level", "warning", "pipeline", "validate", "p.yaml", cwd=tmp_path).stderr
    assert "pipeline_loaded" not in _ctx("pipeline", "validate", "p.yaml", cwd=tmp_path).stderr
    bad = _ctx("--log-level", "loud", "pipeline", "validate", "p.yaml", cwd=tmp_path)
    assert bad.returncode == 2 and "'loud' is not one of 'debug', 'info', 'warning', 'error'" in bad.stderr


def test_error_lines_are_redacted(tmp_path: Path) -> None:
    """The CLI's own `error:` lines pass the value rules too (a state file path holding a key, here)."""
    result = _ctx("build", "--preset", "chat", "--state", f"missing-{ENV_KEY}.json", cwd=tmp_path)
    assert result.returncode == 1 and "error: missing-[REDACTED].json: cannot read state" in result.stderr
    assert ENV_KEY not in result.stderr


LIBRARY_USER = r'''
import sys
from ctxcore import Pipeline
pipeline = Pipeline.from_string("""
version: 1
model: {context_window: 4000}
counter: approximate
providers: [{type: static_prompt, text: "Deploy with the key sk-LIBCANARY0123456789abcdef"}, history]
filters: [token_budget]
""")
built = pipeline.build({"messages": [{"role": "user", "content": "hello"}]})
import structlog
structlog.get_logger("app").warning("app_event", token="ghp_LIBCANARY0123456789abcdefgh")
print("OUTPUT", len(built.messages))
'''


def test_a_library_user_gets_no_debug_lines_and_redacted_warnings() -> None:
    """Importing ctxcore without configuring logging: stdout carries only the program's output,
    ctxcore's debug events (pipeline options with an API key) are not printed, warnings go to stderr redacted."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXCORE_")}  # plugins load as for a user
    done = subprocess.run([sys.executable, "-c", LIBRARY_USER], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "OUTPUT 2\n"
    assert "pipeline_loaded" not in done.stderr and "LIBCANARY" not in done.stderr
    assert "app_event" in done.stderr and "[REDACTED]" in done.stderr


def test_an_application_that_configured_structlog_keeps_its_set_up() -> None:
    """configure_default_logging never overrides a set-up the application made first."""
    code = (
        "import structlog, sys\n"
        "structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stdout))\n"
        "from ctxcore.runtime.logging_setup import configure_default_logging\n"
        "print(configure_default_logging())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "False"
