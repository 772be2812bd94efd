"""ctxcore-example-redact: a complete third-party plugin (see README.md).

``redact`` is a filter replacing secrets in message text before the request
leaves the process; :mod:`ctxcore_example_redact.metrics` appends one JSON line
per build to the file named by ``CTXCORE_METRICS_FILE``.
"""

from ctxcore_example_redact.metrics import METRICS_ENV, BuildMetrics, metrics_line
from ctxcore_example_redact.redact import Redact, RedactConfig

__all__ = ["Redact", "RedactConfig", "BuildMetrics", "metrics_line", "METRICS_ENV"]
