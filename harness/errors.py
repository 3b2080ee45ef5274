"""Errors raised on both sides of the harness's seams, in a leaf module that imports
nothing of the harness: backends raise BackendError and so do systems under test
(harness.systems.hadoop on a Hadoop release it cannot fetch), while the backends
import the systems; defined in harness.backends, the error would close a circle."""


class BackendError(RuntimeError):
    """The backend cannot run here (missing Docker, Toxiproxy, ...); the message says how to fix it."""
