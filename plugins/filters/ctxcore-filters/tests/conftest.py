"""Fixtures of the filter tests: a real HTTP server on 127.0.0.1 speaking OpenAI chat-completions JSON, for summarizer tests.

The server is :class:`ctxcore.testing.harness.openai_server.ChatServer`: it stands in for
a hosted model (the one thing a test cannot run here), records every request
body and answers with a configurable reply, an HTTP error, or no answer at all
(to exercise timeouts).
"""

from __future__ import annotations

import pytest

from ctxcore.testing.harness.openai_server import ChatServer


@pytest.fixture
def chat_server():
    """A running :class:`ChatServer`; stopped after the test."""
    with ChatServer() as server:
        yield server


@pytest.fixture(params=["fast", "reference"])
def token_budget(request):
    """``TokenBudget``'s constructor for both implementations: the fast one, and its ``reference()`` twin.

    The behaviour suites take this fixture, so each runs against both (as CPython's
    json tests run against its pure and C versions).
    """
    from ctxcore_filters import TokenBudget

    def make(*args, **kwargs) -> TokenBudget:
        made = TokenBudget(*args, **kwargs)
        return made if request.param == "fast" else made.reference()

    return make
