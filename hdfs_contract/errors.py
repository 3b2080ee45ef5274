"""The errors both sides name: a cluster that cannot be started, reached or controlled,
and an error a system under test answered an RPC with."""


class ClusterError(RuntimeError):
    """The cluster could not be started, reached or controlled."""


class HdfsError(Exception):
    """Base of every exception that crosses the wire by name (a Hadoop RemoteException's
    class name: FileNotFoundException, LeaseExpiredException, ...)."""
