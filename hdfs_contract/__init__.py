"""The contract between the harness and any system under test, stdlib-only.

Both sides import it: the mini-HDFS (minihdfs/), the Hadoop adapter, the fault injectors
(faults/) and the harness; it imports nothing of theirs.

- catalogue: the names of the events a process may log (spec/EVENTS.md)
- events: the event log writer (EventLog) and reader
- hold: exact injection's hold protocol, the process side (the environment key, the socket messages)
- config: the configuration keys with their types, defaults and units; parse_size, parse_duration
- content: the workload's content generator (the bytes written at each offset of a path)
- lifeline: child processes that die with their parent
- errors: ClusterError, HdfsError (the base of the errors an RPC answers with by name)
- procs: process liveness and stopping
- ports: the port allocator (free_port within a configured range)
"""
