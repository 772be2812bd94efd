"""Render layer: ctxcore messages -> what a provider accepts, and the checks it enforces.

``to_openai`` gives chat-completions messages; ``to_openai_responses`` the
Responses API's ``input`` items; ``to_anthropic`` gives the Messages API's
``system`` blocks, ``messages`` and ``tools``. ``validate_request`` checks
the rules each provider enforces and raises :class:`InvalidHistory` naming the
offending input index, so a request that would be rejected is refused locally
instead. :class:`TargetSpec` (the pipeline's ``target:`` section) says which
provider a build is for.

May import: ``ctxcore.errors`` and the model layer (``ctxcore.model``).
"""

from __future__ import annotations

from ctxcore.render._input import coerce
from ctxcore.render.anthropic import ANTHROPIC_IMAGE_TYPES, anthropic_tools, to_anthropic
from ctxcore.render.openai import to_openai
from ctxcore.render.openai_responses import responses_tools, to_openai_responses
from ctxcore.render.target import TargetSpec
from ctxcore.render.validate import PROVIDERS, TargetProvider, validate_request

__all__ = [
    "ANTHROPIC_IMAGE_TYPES",
    "PROVIDERS",
    "TargetProvider",
    "TargetSpec",
    "anthropic_tools",
    "coerce",
    "responses_tools",
    "to_anthropic",
    "to_openai",
    "to_openai_responses",
    "validate_request",
]
