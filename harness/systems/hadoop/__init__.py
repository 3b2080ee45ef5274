"""Apache Hadoop HDFS as a system under test (the log adapter side: logmap, adapter, java/)."""
