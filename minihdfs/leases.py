"""The NameNode's LeaseManager data structures (seed 000): one lease per holder, indexed
by holder, by path, and sorted by last renewal so the monitor walks the oldest first."""

from __future__ import annotations

import bisect
import datetime
import time
from typing import Callable, Iterator

# HdfsServerConstants.NAMENODE_LEASE_HOLDER: the prefix of the NameNode's own holder name
NAMENODE_LEASE_HOLDER = "HDFS_NameNode"


def is_namenode_holder(holder: str | None) -> bool:
    """The NameNode's own holder, with or without 3.x's timestamp suffix."""
    return bool(holder) and (holder == NAMENODE_LEASE_HOLDER
                             or holder.startswith(NAMENODE_LEASE_HOLDER + "-"))


def _format_time(wall: float) -> str:
    """Hadoop's Time.formatTime: yyyy-MM-dd HH:mm:ss,SSSZ in local time."""
    t = datetime.datetime.fromtimestamp(wall).astimezone()
    return f"{t:%Y-%m-%d %H:%M:%S},{t.microsecond // 1000:03d}{t:%z}"


class Lease:
    def __init__(self, holder: str, now: float):
        self.holder = holder
        self.last_update = now
        self.paths: set[str] = set()

    def key(self) -> tuple[float, str]:
        return (self.last_update, self.holder)

    def expired(self, limit: float, now: float) -> bool:
        return now - self.last_update > limit

    def __repr__(self) -> str:
        return f"Lease(holder={self.holder!r}, paths={sorted(self.paths)})"


class LeaseManager:
    """Leases by holder, by path, and sorted by lastUpdate (oldest first)."""

    def __init__(self, soft_limit: float, hard_limit: float,
                 clock: Callable[[], float] = time.monotonic):
        self.soft_limit, self.hard_limit, self.clock = soft_limit, hard_limit, clock
        self.by_holder: dict[str, Lease] = {}
        self.by_path: dict[str, Lease] = {}
        self._sorted: list[tuple[float, str]] = []
        self._internal_holder: str | None = None
        self._internal_since = 0.0

    def internal_lease_holder(self) -> str:
        """3.x LeaseManager.getInternalLeaseHolder: HDFS_NameNode-<time it was named>,
        named afresh once older than the hard limit, so that a file whose recovery under
        an older name stalled is taken over again by the monitor."""
        now = self.clock()
        if self._internal_holder is None or now - self._internal_since > self.hard_limit:
            self._internal_holder = f"{NAMENODE_LEASE_HOLDER}-{_format_time(time.time())}"
            self._internal_since = now
        return self._internal_holder

    def get(self, holder: str) -> Lease | None:
        return self.by_holder.get(holder)

    def get_by_path(self, path: str) -> Lease | None:
        return self.by_path.get(path)

    def add(self, holder: str, path: str) -> Lease:
        """addLease: the holder's lease (created or renewed) now covers `path`."""
        lease = self.by_holder.get(holder)
        if lease is None:
            lease = Lease(holder, self.clock())
            self.by_holder[holder] = lease
            bisect.insort(self._sorted, lease.key())
        else:
            self.renew(lease)
        lease.paths.add(path)
        self.by_path[path] = lease
        return lease

    def renew(self, lease: Lease) -> None:
        self._sorted.remove(lease.key())
        lease.last_update = self.clock()
        bisect.insort(self._sorted, lease.key())

    def remove(self, lease: Lease, path: str) -> None:
        """removeLease: `path` leaves the lease; a lease with no paths is dropped."""
        lease.paths.discard(path)
        if self.by_path.get(path) is lease:
            del self.by_path[path]
        if not lease.paths and self.by_holder.get(lease.holder) is lease:
            del self.by_holder[lease.holder]
            self._sorted.remove(lease.key())

    def reassign(self, lease: Lease, path: str, new_holder: str) -> Lease:
        self.remove(lease, path)
        return self.add(new_holder, path)

    def change_path(self, src: str, dst: str) -> None:
        """rename moves the leases of src (and every path below it) to dst."""
        for path in [p for p in self.by_path if p == src or p.startswith(src.rstrip("/") + "/")]:
            lease = self.by_path.pop(path)
            new = dst + path[len(src):]
            lease.paths.discard(path)
            lease.paths.add(new)
            self.by_path[new] = lease

    def sorted_leases(self) -> Iterator[Lease]:
        """Oldest first."""
        for _, holder in list(self._sorted):
            yield self.by_holder[holder]

    def expired_hard(self) -> list[Lease]:
        now = self.clock()
        out = []
        for lease in self.sorted_leases():
            if not lease.expired(self.hard_limit, now):
                break
            out.append(lease)
        return out

    def expired_soft(self, lease: Lease) -> bool:
        return lease.expired(self.soft_limit, self.clock())
