"""Entry point of ctxcore-langchain: declares the LangChain integration."""

from __future__ import annotations

from typing import Any

from ctxcore import hookimpl


@hookimpl
def register_integrations(register: Any) -> None:
    """Declare the agent middleware (``ctx plugins list`` shows ``integration:langchain``)."""
    register("langchain", framework="langchain>=1.5,<2", entry="ctxcore_langchain:ContextMiddleware",
             description="runs a ctxcore pipeline before each model call of a LangChain agent or LangGraph graph")
