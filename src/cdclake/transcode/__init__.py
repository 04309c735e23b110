"""Transcoding: a decoded stream laid out again by another format's producer rules.

The Spark job (:mod:`cdclake.spark.transcode`) reads a source in bounded batches; this package holds
everything of it that is not Spark:

* :mod:`~cdclake.transcode.spec`: what to transcode (:class:`~cdclake.transcode.spec.TranscodeSpec`);
* :mod:`~cdclake.transcode.endpoints`: where from and where to (a Kafka topic or a captured one);
* :mod:`~cdclake.transcode.records`: what a source message becomes on the way
  (:class:`~cdclake.transcode.records.RecordWriter`, :func:`~cdclake.transcode.records.read_records`);
* :mod:`~cdclake.transcode.layout`: how one target partition's events are laid out and encoded
  (:func:`~cdclake.transcode.layout.lay_out`), with the table schemas :mod:`~cdclake.transcode.derived`
  derives for a Simple protocol target;
* :mod:`~cdclake.transcode.resolution`: how far a batch may go
  (:func:`~cdclake.transcode.resolution.resolve_batch`);
* :mod:`~cdclake.transcode.state`: the progress file that makes the job resumable
  (:class:`~cdclake.transcode.state.Progress`), and the dead letters;
* :mod:`~cdclake.transcode.in_process`: :func:`~cdclake.transcode.in_process.transcode_messages` does it
  all in this process, for a stream held in memory, as one batch: the reference the job is tested against.

**Order.** The output is what the target format's producer would have sent for the same upstream:
the same :class:`~cdclake.producer.Router` lays it out (rows by key, DDL broadcast or to
partition 0, watermarks to every partition, Simple BOOTSTRAPs, DataWorks sequenceIds, Open batches).

* A source **with watermarks** (Open Protocol, Simple, Canal-JSON with ``enable-tidb-extension``) is
  transcoded up to its resolved ts R, the minimum over source partitions of the newest watermark each
  announced (and below any row still waiting for its schema). A batch emits the changes with
  ``R_before < commit ts <= R``, in commit-ts order, and a target watermark at each source watermark ts
  in that window, after the changes at or below it: a target watermark never says more than every
  source partition said, each target partition is in commit-ts order, and a DDL comes after every
  change below it and before every change above it. Changes above R wait: the next batch reads their
  partition again from the first message holding one (``resume``), and drops what it finds at or below
  R, which was emitted. That also drops the copies a producer restart re-sent of changes already out;
  copies within the window (and a DDL's copies on every partition) go out once.
* A source **without watermarks** (Canal-JSON without the extension, DataWorks) is ordered by the
  commit time it carries (``es``, ``eventTime``, as a derived ts) and then its sequence. Each partition
  sends its changes in that order, so one read up to ts t has nothing below t to come, and one read to
  its end nothing at all: a batch emits the changes below the lowest newest ts read of the partitions
  it did not read to their end (:func:`~cdclake.transcode.resolution.unwatermarked_bound`; the
  replication job's resolved sequence), and the rest wait as above. So a DDL does not overtake older
  rows of a slower partition. A change read for the first time below what was emitted (a partition out
  of order, or a copy a restart re-sent) goes out late: at-least-once. DataWorks heartbeats go to a
  DataWorks target once every source partition has passed them and the changes before them are out; a
  target that needs watermarks gets none, for nothing in the source says that a partition has no older
  change left to send.

**Derived.** What the target needs and the source does not carry:

* a **commit ts** (Open Protocol, Simple, Canal-JSON with the extension) from a source without one:
  the commit's physical millisecond the source carries (:attr:`~cdclake.formats.base.Codec.commit_ms_of`)
  shifted past TiDB's 18 logical bits, so the logical part is 0 and commits of one millisecond share
  it. Where the source carries no such time either, the change is a dead letter with the reason.
* a **table schema** for Simple protocol rows, from a source that sends none: the row's columns and
  types as the source carries them, its key columns as the primary key (NOT NULL), the version the
  commit ts of the first row of that shape; a new shape (after a DDL) is a new version, BOOTSTRAPped
  before its first row. A DDL carries the schema its statement makes of the table's latest
  (:func:`cdclake.schema.ddl.interpret`), versioned by its commit ts, so that it names its table.
* a source format's own fields (``meta``) stay only when the target is the same format.
"""
