"""The runnable examples in examples/ run as a user runs them, each in a process of its own (its own
Spark session and warehouse), and end with every table equal to the upstream."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.jvm import short_lived_jvm

pytest.importorskip("pyspark")

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.mark.parametrize("script", ["batch_job.py", "streaming_job.py", "kafka_job.py"])
def test_the_example_runs_and_its_tables_equal_the_upstream(script: str, tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, str(EXAMPLES / script), str(tmp_path)], capture_output=True, text=True,
                         timeout=900, env=short_lived_jvm(os.environ))
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    tables = [line for line in run.stdout.splitlines() if line.endswith((" equal", " DIFFERS"))]
    assert tables and all(line.endswith(" equal") for line in tables), run.stdout
