"""``python -m cdclake``: the ``cdclake`` command, for an environment without the console script."""

from cdclake.cli import main

main()
