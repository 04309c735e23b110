"""Where raw records come from: Kafka, or topics captured to files. Both yield RawMessages."""
