"""The job on real separate executor processes: ``local-cluster[2,1,1024]`` starts two executor JVMs,
each with its own Python workers, so decoding, the carried messages and the per-table MERGEs must
travel in the tasks and the state table, not in anything the driver process holds.

It runs ``cdclake demo --kafka`` as a user would, in a process of its own (one Spark session per
process): the executors read their offset ranges from a real Kafka broker the demo starts. The test
sets no ``PYSPARK_PYTHON``: the session must give the executors the driver's interpreter itself.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.jvm import short_lived_jvm


def test_the_demo_replicates_on_separate_executor_processes(tmp_path: Path) -> None:
    # Simple protocol: rows decode only against the schema messages before them on their partition.
    command = [str(Path(sys.executable).with_name("cdclake")), "demo", "--format", "simple", "--transactions", "40",
               "--master", "local-cluster[2,1,1024]", "--dir", str(tmp_path / "demo"), "--kafka"]
    environment = {name: value for name, value in os.environ.items() if name != "PYSPARK_PYTHON"}
    environment = short_lived_jvm({**environment, "COLUMNS": "200"})
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, env=environment)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "every table equals the upstream" in done.stdout
    # Spark's own log went to the file the command named, not to the terminal.
    output = done.stdout + done.stderr
    assert "Spark's log: " in done.stderr
    assert not [line for line in output.splitlines() if " WARN " in line or "[Stage " in line], output[-4000:]
