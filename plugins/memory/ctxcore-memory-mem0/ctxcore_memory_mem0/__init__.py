"""The ``mem0`` memory store for ctxcore: mem0's Memory or MemoryClient behind the MemoryStore contract."""

from ctxcore_memory_mem0.adapter import RESERVED_KEYS, Mem0MemoryStore
from ctxcore_memory_mem0.plugin import Mem0Config, create_client

__all__ = ["Mem0Config", "Mem0MemoryStore", "RESERVED_KEYS", "create_client"]
