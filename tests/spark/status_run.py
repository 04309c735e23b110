"""``cdclake status ARGS --json`` as a user runs it, in a process of its own that reports, at its end,
which Spark modules it loaded: none, where status reads without Spark."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

_STATUS = """
import sys
from cdclake.cli import app
try:
    app(sys.argv[1:], standalone_mode=False)
finally:
    print("loaded:", sorted(m for m in sys.modules if m.split(".")[0] in ("pyspark", "py4j")), file=sys.stderr)
"""


def status_without_spark(*args: str) -> dict[str, Any]:
    """The report ``cdclake status ARGS --json`` prints; asserts it exited 0 having loaded no Spark module."""
    run = subprocess.run([sys.executable, "-c", _STATUS, "status", *args, "--json"], capture_output=True,
                         text=True, check=False, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stderr.splitlines()[-1] == "loaded: []", run.stderr
    return dict(json.loads(run.stdout))
