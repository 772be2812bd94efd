"""Entry point of ctxcore-memory-mem0: registers the ``mem0`` memory store."""

from __future__ import annotations

import os
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ctxcore import hookimpl
from ctxcore_memory_mem0.adapter import Mem0MemoryStore


class Mem0Config(BaseModel):
    """Options of the ``mem0`` memory store."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["local", "hosted"] = Field(
        default="local", description="local: mem0.Memory in this process; hosted: mem0.MemoryClient (the mem0 platform).")
    config: dict[str, Any] | None = Field(
        default=None, description="local: the dict passed to mem0.Memory.from_config (llm, embedder, vector_store, ...).")
    api_key_env: str = Field(default="MEM0_API_KEY", description="hosted: environment variable holding the API key.")
    host: str | None = Field(default=None, description="hosted: the API base URL (mem0's default when unset).")
    infer: bool = Field(default=True, description="Let mem0's LLM extract facts when recording (false: store text as given).")
    threshold: float | None = Field(default=None, ge=0, description="Minimum similarity of search results (mem0's default when unset).")


def _import_mem0() -> Any:
    try:
        import mem0
    except ImportError as exc:
        raise RuntimeError("the mem0 memory store needs the mem0ai package: "
                           "pip install 'ctxcore-memory-mem0[mem0]'") from exc
    return mem0


def create_client(config: Mem0Config) -> Any:
    """The mem0 ``Memory`` or ``MemoryClient`` the config describes."""
    if config.mode == "hosted":
        if config.config is not None:
            raise ValueError("mem0 'config' applies to mode: local; the hosted platform is configured on its side")
        api_key = os.environ.get(config.api_key_env)
        if not api_key:
            raise ValueError(f"mem0 mode: hosted needs an API key in ${config.api_key_env}")
        return _import_mem0().MemoryClient(api_key=api_key, host=config.host)
    if config.host is not None:
        raise ValueError("mem0 'host' applies to mode: hosted")
    mem0 = _import_mem0()
    return mem0.Memory.from_config(config.config) if config.config is not None else mem0.Memory()


def _mem0(config: Mem0Config) -> Mem0MemoryStore:
    return Mem0MemoryStore(create_client(config), infer=config.infer, threshold=config.threshold)


@hookimpl
def register_memory_stores(register: Any) -> None:
    """Offer the mem0 adapter."""
    register("mem0", _mem0, config=Mem0Config,
             description="mem0 (Memory or MemoryClient): namespace -> user_id, semantic search.")
