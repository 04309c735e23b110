"""The ordering core both jobs share, without Spark: the replication job (:mod:`cdclake.spark.replicate`,
and :class:`~cdclake.spark.ChangeApplier` over it) and the transcoder (:mod:`cdclake.spark.transcode`, and
:func:`cdclake.transcode.in_process.transcode_messages` with no Spark at all).

* :mod:`~cdclake.ordering.reading`: one source partition's messages decoded in order after those carried
  into it (:class:`~cdclake.ordering.reading.PartitionReading`): schema messages primed, rows waiting
  for their schema, events the decoder still holds at the end, messages that cannot be decoded;
* :mod:`~cdclake.ordering.records`: the records a reading writes, collected a tuple per record and handed
  out as Arrow record batches (:class:`~cdclake.ordering.records.RecordColumns`);
* :mod:`~cdclake.ordering.resolution`: how far a batch may go: the resolved ts (the minimum over
  partitions of the newest watermark, below every row still waiting for its schema), the bound of a
  source without watermarks (the lowest newest position of the partitions not read to their end),
  and which schema messages a partition keeps carrying;
* :mod:`~cdclake.ordering.bad_messages`: ``on-bad-message``, what a job does with a message it cannot
  decode (:class:`~cdclake.ordering.bad_messages.BadMessageError` when it stops).

Each job writes what it reads its own way (change records for tables, laid-out records for a target
format) and applies or emits it its own way; what a batch may take, and the order, are decided here.
"""
