"""Agent-runtime layer: what an application uses around each build.

- :mod:`~ctxcore.runtime.threads`: :class:`Thread`, the turn loop over a
  checkpointer (``Pipeline.thread``); :mod:`~ctxcore.runtime.replies` reads
  model replies into the assistant message it appends.
- :mod:`~ctxcore.runtime.memory_service`: :class:`MemoryService`, a long-term
  memory store bound to an agent's namespace.
- :mod:`~ctxcore.runtime.memory_tools`: the ``memory_add`` / ``memory_search``
  tools an agent loop offers a model.
- :mod:`~ctxcore.runtime.message_store`: :class:`StateMessageStore`, a
  thread-safe message list with coercion and retention.
- :mod:`~ctxcore.runtime.logging_setup`: structlog configuration with redaction
  (and the quiet library default applied on ``import ctxcore``).

May import: every layer below it (errors, model, render, engine, kit, plugins, pipeline).
"""
