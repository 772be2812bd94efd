"""Render layer: ctxcore messages -> what a provider accepts, and the checks it enforces.

``to_openai`` gives chat-completions messages; ``to_anthropic`` gives the
Messages API's ``system`` blocks and ``messages``. ``validate_request`` checks
the rules each provider enforces and raises :class:`InvalidHistory` naming the
offending input index, so a request that would be rejected is refused locally
instead. :class:`TargetSpec` (the pipeline's ``target:`` section) says which
provider a build is for.

May import: ``ctxcore.errors`` and the model layer (``ctxcore.model``).
"""

from __future__ import annotations

from ctxcore.render.anthropic import ANTHROPIC_IMAGE_TYPES, to_anthropic
from ctxcore.render.openai import to_openai
from ctxcore.render.target import TargetSpec
from ctxcore.render.validate import PROVIDERS, TargetProvider, validate_request

__all__ = [
    "ANTHROPIC_IMAGE_TYPES",
    "PROVIDERS",
    "TargetProvider",
    "TargetSpec",
    "to_anthropic",
    "to_openai",
    "validate_request",
]
