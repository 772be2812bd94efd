"""OpenTelemetry: a build is a ``ctxcore.build`` span with one child per component, memory operations are GenAI
memory spans, message text appears only when the user opts in, and nothing is imported without opentelemetry.

Real parts: the opentelemetry SDK's tracer provider with its in-memory exporter, the shipped plugins, a SQLite
memory store and a thread over a real pipeline.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ctxcore_checkpointers.plugin
import ctxcore_counters.plugin
import ctxcore_filters.plugin
import ctxcore_memory.plugin
import ctxcore_providers.plugin
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from ctxcore import ContextBuilder, MemoryService, Message, Pipeline, human, system
from ctxcore.engine.telemetry import CAPTURE_CONTENT_ENV, use_tracer_provider
from ctxcore.testing import fresh_host

_EXPORTER = InMemorySpanExporter()
_PROVIDER = TracerProvider()
_PROVIDER.add_span_processor(SimpleSpanProcessor(_EXPORTER))


@pytest.fixture(autouse=True)
def spans() -> Iterator[InMemorySpanExporter]:
    """ctxcore's spans go to an in-memory exporter during the test; the process's global provider is left alone."""
    _EXPORTER.clear()
    use_tracer_provider(_PROVIDER)
    try:
        yield _EXPORTER
    finally:
        use_tracer_provider(None)
        _EXPORTER.clear()


def _host() -> Any:
    return fresh_host(
        ("ctxcore-providers", ctxcore_providers.plugin), ("ctxcore-filters", ctxcore_filters.plugin),
        ("ctxcore-counters", ctxcore_counters.plugin), ("ctxcore-memory", ctxcore_memory.plugin),
        ("ctxcore-checkpointers", ctxcore_checkpointers.plugin),
    )


PIPELINE = """\
version: 1
name: traced
model: {{context_window: {window}, reserve_output_tokens: 100}}
counter: approximate
{memory}
providers:
  - {{type: static_prompt, text: "You are a careful assistant."}}
  {recall}
  - {{type: history, id: chat}}
filters:
  - {{type: max_messages, max_messages: 6}}
  - token_budget
"""


def _pipeline(tmp_path: Path, *, window: int = 4000, memory: bool = False) -> Pipeline:
    text = PIPELINE.format(
        window=window,
        memory=f"memory: {{type: sqlite, path: {json.dumps(str(tmp_path / 'memory.db'))}}}" if memory else "",
        recall="- {type: memory_recall, id: recall, limit: 3}" if memory else "",
    )
    return Pipeline.from_string(text, host=_host())


def _history(n: int, secret: str = "") -> list[dict[str, str]]:
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i} {secret}".strip()} for i in range(n)]


def _by_name(exporter: InMemorySpanExporter) -> dict[str, ReadableSpan]:
    return {s.name: s for s in exporter.get_finished_spans()}


class TestBuildSpan:
    def test_a_build_is_one_span_with_its_outcome(self, spans: InMemorySpanExporter, tmp_path: Path) -> None:
        """The build span names the pipeline, target and budget and counts tokens and kept/dropped messages."""
        built = _pipeline(tmp_path).build({"messages": _history(10)}, {"thread_id": "conv-7"})
        span = _by_name(spans)["ctxcore.build"]
        attrs = dict(span.attributes or {})
        assert attrs["gen_ai.operation.name"] == "build_context"
        assert attrs["ctxcore.pipeline"] == "traced"
        assert attrs["ctxcore.target"] == "openai"
        assert attrs["ctxcore.budget"] == built.report.budget
        assert attrs["gen_ai.conversation.id"] == "conv-7"
        assert attrs["ctxcore.tokens.output"] == built.report.total_tokens
        assert attrs["ctxcore.messages.kept"] == len(built.messages) == 7  # the prompt and the newest six
        assert attrs["ctxcore.messages.input"] == 11
        assert attrs["ctxcore.messages.dropped"] == 4
        assert attrs["ctxcore.messages.compacted"] == 0
        assert attrs["ctxcore.duration_ms"] >= 0
        assert attrs["ctxcore.messages.dropped"] == len(built.report.dropped)  # the report's own reading agrees

    def test_compaction_counts_summaries_apart_from_drops(self, spans: InMemorySpanExporter) -> None:
        """Messages a summary replaced are ``compacted``, not ``dropped``, and agree with the report's records."""
        text = """\
version: 1
name: compacting
model: {context_window: 1200, reserve_output_tokens: 100}
counter: approximate
providers:
  - {type: static_prompt, text: "You are a careful assistant."}
  - {type: history, id: chat}
filters:
  - {type: compaction, steps: [{kind: summarize}], trigger_ratio: 0.5, target_ratio: 0.3}
  - token_budget
"""
        history = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i} " + "word " * 40}
                   for i in range(16)]
        built = Pipeline.from_string(text, host=_host()).build({"messages": history})
        attrs = _by_name(spans)["ctxcore.build"].attributes
        assert built.report.compressions and attrs["ctxcore.compressions"] == len(built.report.compressions)
        assert attrs["ctxcore.messages.compacted"] == len(built.report.compressed) > 0
        assert attrs["ctxcore.messages.dropped"] == len(built.report.dropped)
        assert attrs["ctxcore.tokens.input"] > attrs["ctxcore.tokens.output"]

    def test_one_child_span_per_component_never_per_message(self, spans: InMemorySpanExporter, tmp_path: Path) -> None:
        """Each provider and filter is one child of the build span, whatever the number of messages."""
        _pipeline(tmp_path, window=100_000).build({"messages": _history(300)})
        finished = spans.get_finished_spans()
        build = next(s for s in finished if s.name == "ctxcore.build")
        children = sorted(s.name for s in finished if s.parent is not None and s.parent.span_id == build.context.span_id)
        assert children == sorted(["ctxcore.provider static_prompt", "ctxcore.provider chat",
                                   "ctxcore.filter max_messages", "ctxcore.filter token_budget"])
        assert len(finished) == 5
        chat = _by_name(spans)["ctxcore.provider chat"]
        assert chat.attributes["ctxcore.messages.output"] == 300
        cut = _by_name(spans)["ctxcore.filter max_messages"]
        assert (cut.attributes["ctxcore.messages.input"], cut.attributes["ctxcore.messages.output"]) == (301, 7)

    def test_the_build_nests_under_the_users_current_span(self, spans: InMemorySpanExporter, tmp_path: Path) -> None:
        """A thread's build made inside the user's model-call span is that span's child, in the same trace."""
        pipeline = _pipeline(tmp_path)
        thread = pipeline.thread("t-1")
        thread.add_user("hello")
        with _PROVIDER.get_tracer("my-agent").start_as_current_span("chat gpt-4o") as outer:
            thread.build()
        build = _by_name(spans)["ctxcore.build"]
        assert build.parent is not None and build.parent.span_id == outer.get_span_context().span_id
        assert build.context.trace_id == outer.get_span_context().trace_id
        assert build.attributes["gen_ai.conversation.id"] == "t-1"

    def test_message_text_only_when_the_user_opts_in(self, spans: InMemorySpanExporter, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
        """Without the opt-in no span carries message text; with it the text is there, secrets redacted."""
        canary = "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
        pipeline = _pipeline(tmp_path)
        monkeypatch.delenv(CAPTURE_CONTENT_ENV, raising=False)
        pipeline.build({"messages": _history(3, secret="zebra-canary")})
        dumped = json.dumps([dict(s.attributes or {}) for s in spans.get_finished_spans()])
        assert "zebra-canary" not in dumped and "careful assistant" not in dumped

        spans.clear()
        monkeypatch.setenv(CAPTURE_CONTENT_ENV, "true")
        pipeline.build({"messages": _history(3, secret=canary)})
        attrs = _by_name(spans)["ctxcore.build"].attributes
        messages = json.loads(attrs["gen_ai.input.messages"])
        assert messages[0] == {"role": "user", "parts": [{"type": "text", "content": messages[0]["parts"][0]["content"]}]}
        assert "message 0" in messages[0]["parts"][0]["content"]
        assert json.loads(attrs["gen_ai.system_instructions"]) == [{"type": "text", "content": "You are a careful assistant."}]
        assert "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY" not in json.dumps(dict(attrs))

    def test_a_failing_component_marks_its_span_and_the_builds(self, spans: InMemorySpanExporter) -> None:
        """A provider that raises leaves an error status and the exception on its span and on the build span."""

        class Broken:
            def get_messages(self, state: Any, runtime: Any) -> list[Message]:
                raise RuntimeError("backend down")

        builder = ContextBuilder([Broken()], counter=ctxcore_counters.ApproximateCounter())
        with pytest.raises(Exception, match="backend down"):
            builder.build()
        named = _by_name(spans)
        assert named["ctxcore.provider broken"].status.status_code is StatusCode.ERROR
        assert named["ctxcore.build"].status.status_code is StatusCode.ERROR
        assert any(e.name == "exception" for e in named["ctxcore.build"].events)

    def test_a_skipped_optional_component_is_an_error_span_and_a_warning_event(self, spans: InMemorySpanExporter) -> None:
        """An optional provider that fails is skipped: its span says so and the build span records the warning."""
        from ctxcore.engine.steps import Step

        class Broken:
            def get_messages(self, state: Any, runtime: Any) -> list[Message]:
                raise RuntimeError("flaky")

        builder = ContextBuilder([Step("extra", Broken(), optional=True), Step("prompt", _Static())],
                                 counter=ctxcore_counters.ApproximateCounter())
        builder.build()
        named = _by_name(spans)
        assert named["ctxcore.provider extra"].attributes["ctxcore.component.skipped"] is True
        assert named["ctxcore.provider extra"].status.status_code is StatusCode.ERROR
        build = named["ctxcore.build"]
        assert build.status.status_code is StatusCode.UNSET
        assert [e.attributes["message"] for e in build.events if e.name == "ctxcore.warning"] == [
            "optional provider 'extra' skipped: RuntimeError: flaky"]

    def test_an_async_build_is_traced_the_same_way(self, spans: InMemorySpanExporter, tmp_path: Path) -> None:
        """``abuild`` gives the same build span and component children as ``build``."""
        asyncio.run(_pipeline(tmp_path).abuild({"messages": _history(4)}))
        names = sorted(s.name for s in spans.get_finished_spans())
        assert names == sorted(["ctxcore.build", "ctxcore.provider static_prompt", "ctxcore.provider chat",
                                "ctxcore.filter max_messages", "ctxcore.filter token_budget"])


class _Static:
    def get_messages(self, state: Any, runtime: Any) -> list[Message]:
        return [system("Be brief."), human("hi")]


class TestMemorySpans:
    def test_record_and_search_are_genai_memory_spans(self, spans: InMemorySpanExporter, tmp_path: Path) -> None:
        """``MemoryService.add`` is ``create_memory`` and ``search`` is ``search_memory``, with store and namespace."""
        store = _pipeline(tmp_path, memory=True).memory
        service = MemoryService(store, namespace="ada")
        service.add("Ada prefers tabs over spaces.")
        found = service.search("tabs or spaces?")
        assert found
        named = _by_name(spans)
        create = named[f"create_memory {type(store).__name__}"]
        search = named[f"search_memory {type(store).__name__}"]
        assert create.kind is trace.SpanKind.CLIENT
        assert create.attributes["gen_ai.operation.name"] == "create_memory"
        assert search.attributes["gen_ai.operation.name"] == "search_memory"
        assert search.attributes["gen_ai.memory.namespace"] == "ada"
        assert search.attributes["ctxcore.memory.result_count"] == len(found)
        assert "gen_ai.memory.query.text" not in search.attributes  # opt-in only

    def test_recall_during_a_build_is_a_search_under_the_provider_span(self, spans: InMemorySpanExporter,
                                                                        tmp_path: Path) -> None:
        """The ``memory_recall`` provider's search is a ``search_memory`` span inside its provider span."""
        pipeline = _pipeline(tmp_path, memory=True)
        MemoryService(pipeline.memory).add("The user's cat is called Miso.")
        spans.clear()
        built = pipeline.build({"messages": [{"role": "user", "content": "What is my cat called?"}]})
        named = _by_name(spans)
        search = next(s for s in spans.get_finished_spans() if s.name.startswith("search_memory"))
        assert search.parent is not None and search.parent.span_id == named["ctxcore.provider recall"].context.span_id
        assert named["ctxcore.build"].attributes["ctxcore.messages.recalled"] == 1
        assert any("Miso" in m.text for m in built.messages)

    def test_the_query_is_recorded_only_with_content_capture(self, spans: InMemorySpanExporter, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
        """With the opt-in, the search span carries the query text and the records found."""
        monkeypatch.setenv(CAPTURE_CONTENT_ENV, "true")
        service = MemoryService(_pipeline(tmp_path, memory=True).memory)
        service.add("Deployments go out on Tuesdays.")
        service.search("when do deployments go out?")
        search = next(s for s in spans.get_finished_spans() if s.name.startswith("search_memory"))
        assert search.attributes["gen_ai.memory.query.text"] == "when do deployments go out?"
        assert "Tuesdays" in search.attributes["gen_ai.memory.records"]


def test_nothing_is_imported_without_opentelemetry(tmp_path: Path) -> None:
    """With opentelemetry unimportable, builds and memory calls run and nothing of it is loaded."""
    script = textwrap.dedent("""
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "opentelemetry" or name.startswith("opentelemetry."):
                    raise ImportError("blocked: " + name)
        sys.meta_path.insert(0, Block())
        import ctxcore
        assert not [m for m in sys.modules if m.startswith("opentelemetry")]
        from ctxcore import ContextBuilder, human
        from ctxcore_counters import ApproximateCounter
        class P:
            def get_messages(self, state, runtime):
                return [human("hi")]
        built = ContextBuilder([P()], counter=ApproximateCounter()).build()
        assert built.messages[0].text == "hi"
        from ctxcore.engine import telemetry
        assert telemetry.get_tracer() is None
        loaded = [m for m in sys.modules if m.startswith("opentelemetry")]
        assert not loaded, loaded
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_import_ctxcore_does_not_import_opentelemetry() -> None:
    """Installed or not, opentelemetry is imported at the first build, never by ``import ctxcore``."""
    done = subprocess.run(
        [sys.executable, "-c", "import sys, ctxcore; print(any(m.startswith('opentelemetry') for m in sys.modules))"],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_no_span_until_a_tracer_provider_is_set() -> None:
    """With the API but no provider set, a build starts no span; a provider set later records from the next build."""
    script = textwrap.dedent("""
        from opentelemetry import context, trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        from ctxcore import ContextBuilder, human
        from ctxcore.engine import telemetry
        from ctxcore_counters import ApproximateCounter
        class P:
            def get_messages(self, state, runtime):
                return [human("hi")]
        builder = ContextBuilder([P()], counter=ApproximateCounter())
        attached = []
        attach = context.attach
        context.attach = lambda ctx: attached.append(ctx) or attach(ctx)
        proxy = trace.get_tracer_provider()
        started = []
        start = type(proxy.get_tracer("x")).start_as_current_span
        type(proxy.get_tracer("x")).start_as_current_span = lambda *a, **k: started.append(a) or start(*a, **k)
        builder.build()
        assert telemetry.get_tracer() is None and not started and not attached, (started, attached)
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        builder.build()
        assert [s.name for s in exporter.get_finished_spans()][-1] == "ctxcore.build", exporter.get_finished_spans()
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
