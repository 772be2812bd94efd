"""Entry point of ctxcore-openai-agents: declares the integration (``ctx plugins list`` shows ``integration:openai-agents``)."""

from __future__ import annotations

from typing import Any

from ctxcore import hookimpl


@hookimpl
def register_integrations(register: Any) -> None:
    """Declare the OpenAI Agents SDK adapter; the listing never imports it."""
    register(
        "openai-agents",
        framework="openai-agents>=0.24,<0.25",
        entry="ctxcore_openai_agents:ContextFilter",
        description="RunConfig(call_model_input_filter=ContextFilter(pipeline)) and CheckpointerSession (SDK sessions on a ctxcore thread log)",
    )
