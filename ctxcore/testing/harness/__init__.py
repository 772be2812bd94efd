"""What ctxcore's own tests (and a plugin's) run against: servers, clusters, stress loops.

- :mod:`~ctxcore.testing.harness.openai_server`: a local server speaking the
  OpenAI chat-completions wire protocol (the stub for a hosted model).
- :mod:`~ctxcore.testing.harness.anthropic_server`: a local server speaking the
  Anthropic Messages API (its wire rules, signed thinking blocks).
- :mod:`~ctxcore.testing.harness.postgres`: a throwaway PostgreSQL cluster.
- :mod:`~ctxcore.testing.harness.redis`: a throwaway ``redis-server``.
- :mod:`~ctxcore.testing.harness.servers`: what those two share (stopping, logs,
  fail-or-skip, the session fixture).
- :mod:`~ctxcore.testing.harness.checkpointer_stress`: SIGKILL crash loops and
  concurrent writers against a checkpointer.
- :mod:`~ctxcore.testing.harness.memory_recall`: a small labelled recall set and
  recall@k for memory stores.

Kept apart from the contract suites (:mod:`ctxcore.testing.contracts`): a
harness starts processes or servers; a contract is a base class of checks.
Import the module you need; nothing is imported here. This package is in the
repository only: ``pyproject.toml`` excludes it from the ``ctxcore-llm`` wheel,
so the published package holds no test servers.

May import: what :mod:`ctxcore.testing` may (every layer but tools and cli),
never the contract suites.
"""
