"""A Hadoop client's adapted DFSClient log that got no event (a recoverLease-only client)
is dropped at the end of the run, so that I1 does not take it for a silent process;
one with events and the clients' own logs stay."""

from harness.systems.hadoop import drop_empty_client_logs


def test_empty_dfsclient_log_is_dropped(tmp_path):
    (tmp_path / "c2-dfsclient.jsonl").write_text("")
    (tmp_path / "c1-dfsclient.jsonl").write_text('{"event": "client.pipeline.error"}\n')
    (tmp_path / "c2.jsonl").write_text("")     # a process's own log: I1 must still see it
    (tmp_path / "dn1.jsonl").write_text("")
    drop_empty_client_logs(str(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c1-dfsclient.jsonl", "c2.jsonl",
                                                          "dn1.jsonl"]
    drop_empty_client_logs(str(tmp_path / "missing"))   # no events folder: nothing to do
