"""Entry point of ctxcore-pydantic-ai: declares the integration (``ctx plugins list`` shows ``integration:pydantic-ai``)."""

from __future__ import annotations

from typing import Any

from ctxcore import hookimpl


@hookimpl
def register_integrations(register: Any) -> None:
    """Declare the pydantic-ai adapter (nothing is imported until a user imports it)."""
    register("pydantic-ai", framework="pydantic-ai-slim>=2.68,<3", entry="ctxcore_pydantic_ai:ContextCapability",
             description="pydantic-ai: a capability (and history processors) building each model request with the pipeline.")
