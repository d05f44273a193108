"""The Federator replication application: PySpark Structured Streaming data sources and the pipeline
that runs one ReplicationTask (entry point ``spark-apps/replicate.py``)."""
