"""Pressure levels: how hard a request pressed on its budget, in ChachaAgent's five levels.

ChachaAgent reads the utilization of an assembled context and recommends a
compression level. ctxcore's ``compaction`` filter applies those levels
itself (its stages ``tool_results``, ``trim``, ``summarize``, ``consolidate``);
:func:`recommended_level` gives the reference recommendation for any
utilization, and ``BuildReport.pressure_level`` says what a build was under.

The thresholds are the reference table's, with each range closed below and
open above, except that exactly 0.95 is still ``SUMMARIZED`` (the table says
``CONSOLIDATED`` is "> 0.95"):

=============  ===============  =======================================
level          utilization      ctxcore stage that applies it
=============  ===============  =======================================
NONE           < 0.5            none
FROZEN         0.5 - 0.7        ``tool_results`` (compact old results)
TRIMMED        0.7 - 0.85       ``trim`` (drop the middle of history)
SUMMARIZED     0.85 - 0.95      ``summarize`` (one model call)
CONSOLIDATED   > 0.95           ``consolidate`` (merge summaries)
=============  ===============  =======================================
"""

from __future__ import annotations

import math
from enum import Enum

__all__ = ["LEVEL_OF_STAGE", "PressureLevel", "recommended_level"]


class PressureLevel(str, Enum):
    """The five levels, in increasing order of pressure (compare with :meth:`rank`)."""

    NONE = "none"
    FROZEN = "frozen"
    TRIMMED = "trimmed"
    SUMMARIZED = "summarized"
    CONSOLIDATED = "consolidated"

    @property
    def rank(self) -> int:
        """0 for NONE up to 4 for CONSOLIDATED."""
        return list(PressureLevel).index(self)


#: the level each compaction stage applies.
LEVEL_OF_STAGE: dict[str, PressureLevel] = {
    "tool_results": PressureLevel.FROZEN,
    "trim": PressureLevel.TRIMMED,
    "summarize": PressureLevel.SUMMARIZED,
    "consolidate": PressureLevel.CONSOLIDATED,
}


def recommended_level(pressure: float) -> PressureLevel:
    """The level the reference recommends for a utilization ``pressure`` (tokens / budget).

    Raises:
        ValueError: ``pressure`` is negative or not a number.
    """
    if isinstance(pressure, bool) or not isinstance(pressure, (int, float)) or math.isnan(pressure) or pressure < 0:
        raise ValueError(f"pressure must be a utilization >= 0 (tokens / budget), got {pressure!r}")
    if pressure < 0.5:
        return PressureLevel.NONE
    if pressure < 0.7:
        return PressureLevel.FROZEN
    if pressure < 0.85:
        return PressureLevel.TRIMMED
    if pressure <= 0.95:
        return PressureLevel.SUMMARIZED
    return PressureLevel.CONSOLIDATED
