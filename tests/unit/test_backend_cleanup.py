"""What a run reaps first: its own backend's leftovers (harness.backends.cleanup)."""

import harness.backends as backends
import harness.backends.docker as docker_backend
import harness.backends.local as local_backend


def _record(monkeypatch):
    calls = []
    monkeypatch.setattr(local_backend, "reap_local", lambda: calls.append("local") or ["p"])
    monkeypatch.setattr(docker_backend, "reap_docker", lambda: calls.append("docker") or ["c"])
    return calls


def test_a_local_run_does_not_ask_the_docker_engine(monkeypatch):
    calls = _record(monkeypatch)
    assert backends.cleanup("local") == ["p"]
    assert calls == ["local"]


def test_a_docker_run_and_the_cleanup_command_reap_both(monkeypatch):
    calls = _record(monkeypatch)
    assert backends.cleanup("docker") == ["p", "c"]
    assert backends.cleanup_all() == ["p", "c"]
    assert calls == ["local", "docker", "local", "docker"]
