"""Where replicated tables live: the :class:`~cdclake.sinks.base.Sink` protocol the pipeline writes
through (:mod:`cdclake.sinks.base`, with what a sink must guarantee for exactly once), and one package
per kind of store: :mod:`cdclake.sinks.iceberg`.
"""
