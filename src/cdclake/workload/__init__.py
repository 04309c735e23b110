"""An upstream simulator with an oracle, for the demo, the tests and the benchmarks.

:class:`Workload` simulates a TiDB cluster (tables of every MySQL type family, transactions of inserts,
updates and deletes, DDL mid-stream) from a seeded :class:`WorkloadSpec`; :func:`produce` lays its
commits out on a topic's partitions as a format's producer does (dispatch by key, broadcast watermarks,
DDL, Simple BOOTSTRAPs, Open batches, at-least-once duplicates), encoded by that format's codec; its
:meth:`Workload.oracle` says what the upstream tables hold, after the last commit or at any commit ts.
docs/workload.md has the whole story::

    workload = Workload(WorkloadSpec(seed=7, transactions=500))
    stream = produce(workload, "simple", {"send-bootstrap-in-msg-count": 100}, duplicates=2)
    write_captured(stream, Path("capture"), stream.topic)
    expected = workload.oracle().carried(stream.spec.format_name, stream.codec_options)
"""

# The producer rules and the topic writers are the pipeline's (cdclake.producer); the simulator's users
# get them here too, beside what produces the streams they write.
from cdclake.producer import ProducerSpec, produce_to_kafka, write_captured
from cdclake.workload.generator import Commit, Summary, Workload, WorkloadError, WorkloadSpec, physical_ms, tso
from cdclake.workload.large_messages import shrink_large_messages
from cdclake.workload.oracle import Oracle, TableState, key_of, value_carrier
from cdclake.workload.production import ResentRange, Stream, messages, produce

__all__ = [
    "Commit",
    "Oracle",
    "ProducerSpec",
    "ResentRange",
    "Stream",
    "Summary",
    "TableState",
    "Workload",
    "WorkloadError",
    "WorkloadSpec",
    "key_of",
    "messages",
    "physical_ms",
    "produce",
    "produce_to_kafka",
    "shrink_large_messages",
    "tso",
    "value_carrier",
    "write_captured",
]
