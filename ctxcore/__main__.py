"""``python -m ctxcore``: the ``ctx`` command line."""

from ctxcore.cli import main

main()
