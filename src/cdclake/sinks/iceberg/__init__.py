"""Iceberg tables through Spark: :class:`~cdclake.sinks.iceberg.sink.IcebergSink` and what it is made of
(:mod:`.tables` mirrors, :mod:`.state` the job's state, :mod:`.evolution` schema changes, :mod:`.commit`
snapshot properties on SQL writes, :mod:`.catalogs` what a catalog refuses)."""
