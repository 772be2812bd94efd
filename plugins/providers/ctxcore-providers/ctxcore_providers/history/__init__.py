"""``history``: the conversation so far, read from ``state[state_key]``.

Items may be ctxcore :class:`~ctxcore.Message` objects, OpenAI chat dicts,
Anthropic message dicts or OpenAI Responses input items. The package:

- :mod:`.provider`: :class:`History`, its reference path and its fast path;
- :mod:`.ids`: the one id formula;
- :mod:`.standins`: the fast path's stand-ins (:data:`FAST_RUN` gates it);
- :mod:`.formats`: the input forms, private copies and marker neutralising;
- :mod:`.config`: :class:`HistoryConfig` and the replay cap.

See docs/providers.md, "history".
"""

from __future__ import annotations

from ctxcore_providers.history.config import HistoryConfig, auto_replay_cap, replay_start, resolve_replay_cap
from ctxcore_providers.history.formats import private_copy
from ctxcore_providers.history.ids import ID_EDGE, stable_id
from ctxcore_providers.history.provider import GUARD, PAUSE_GC, SELF_TOOL_PLAN, TOOL_OBSERVATION, History
from ctxcore_providers.history.standins import FAST_RUN

__all__ = [
    "FAST_RUN",
    "GUARD",
    "ID_EDGE",
    "PAUSE_GC",
    "SELF_TOOL_PLAN",
    "TOOL_OBSERVATION",
    "History",
    "HistoryConfig",
    "auto_replay_cap",
    "private_copy",
    "replay_start",
    "resolve_replay_cap",
    "stable_id",
]
