"""Pipeline layer: YAML -> spec -> compiled builder, the shipped presets and the JSON schema.

- :mod:`~ctxcore.pipeline.spec`: :class:`PipelineSpec` (the file's model) and
  :class:`Pipeline` (components resolved through the registry, compiled into a
  :class:`ctxcore.ContextBuilder`).
- :mod:`~ctxcore.pipeline.presets`: preset pipelines (YAML files shipped by
  plugins) and the ``ContextBuilder.for_chat``/``for_react``/``for_skill``
  constructors, which it registers with the engine.
- :mod:`~ctxcore.pipeline.schema`: the JSON Schema of pipeline files for the
  installed components.

May import: every layer below it (errors, model, render, engine, kit, plugins).
"""

from __future__ import annotations

from ctxcore.pipeline.spec import (
    DEFAULT_COUNTER,
    ModelSpec,
    Pipeline,
    PipelineSpec,
    StepSpec,
)

__all__ = ["DEFAULT_COUNTER", "ModelSpec", "Pipeline", "PipelineSpec", "StepSpec"]
