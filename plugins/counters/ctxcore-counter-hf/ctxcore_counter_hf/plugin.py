"""Entry point of ctxcore-counter-hf (filled in below)."""
