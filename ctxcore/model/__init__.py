"""Model layer: the data ctxcore works on, and the rules that hold for it everywhere.

- :mod:`~ctxcore.model.messages`: :class:`Message` (immutable, with provenance),
  its content blocks and the OpenAI dict round trip.
- :mod:`~ctxcore.model.anthropic_io`: Anthropic messages in (``Message.from_anthropic``).
- :mod:`~ctxcore.model.responses_io`: OpenAI Responses input items in (``messages_from_responses``).
- :mod:`~ctxcore.model.transactions`: tool-call units, the one tool-pairing walk,
  the legal start and history sanitizing.
- :mod:`~ctxcore.model.images`: image sizes and token costs from bytes.
- :mod:`~ctxcore.model.memory_item`: :class:`MemoryItem`, one long-term memory.
- :mod:`~ctxcore.model.safe_yaml`: the YAML loader (no tags, capped aliases and
  size, duplicate keys refused, ``${VAR}`` interpolation, located errors).

May import: ``ctxcore.errors`` only (and ``ctxcore.redaction``, which imports nothing).
Nothing is re-exported here: import the module, or use :mod:`ctxcore`.
"""
