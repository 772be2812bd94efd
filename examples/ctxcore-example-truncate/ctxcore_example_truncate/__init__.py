"""ctxcore-example-truncate: a third-party filter plugin (see README.md).

``truncate_tool_results`` cuts tool results longer than ``max_chars`` characters
and marks the cut; docs/plugins.md ("A filter by hand") includes these files.
"""

from ctxcore_example_truncate.truncate import TruncateConfig, TruncateToolResults

__all__ = ["TruncateConfig", "TruncateToolResults"]
