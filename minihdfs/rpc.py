"""Request/response RPC over message frames, and the remote exceptions of HDFS.

A server exposes the `rpc_<op>` methods of a handler object. A reply is either
`{"id", "ok": true, "result"}` or `{"id", "ok": false, "error": "<ExceptionName>",
"message"}`; the client raises the matching `HdfsError` subclass, so callers write
`except LeaseExpiredException` as they would against Hadoop.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import select
import socket
import threading
import traceback
import types
import typing
from typing import Any, Callable

from hdfs_contract.errors import HdfsError

from . import wire


def _error(name: str) -> type:
    return type(name, (HdfsError,), {})


FileAlreadyExistsException = _error("FileAlreadyExistsException")
FileNotFoundException = _error("FileNotFoundException")
AlreadyBeingCreatedException = _error("AlreadyBeingCreatedException")
RecoveryInProgressException = _error("RecoveryInProgressException")
LeaseExpiredException = _error("LeaseExpiredException")
NotReplicatedYetException = _error("NotReplicatedYetException")
ReplicaNotFoundException = _error("ReplicaNotFoundException")
ReplicaAlreadyExistsException = _error("ReplicaAlreadyExistsException")
IOExceptionRemote = _error("IOException")
InvalidRequestException = _error("InvalidRequestException")
MalformedFrameError = _error("MalformedFrame")
UnregisteredNodeException = _error("UnregisteredNodeException")
SafeModeException = _error("SafeModeException")
InternalError = _error("InternalError")

# this module's errors only: HdfsError is the contract's, another system may subclass it too
ERRORS = {cls.__name__: cls for cls in HdfsError.__subclasses__() if cls.__module__ == __name__}


def remote_error(name: str, message: str) -> HdfsError:
    return ERRORS.get(name, InternalError)(message)


class ConnectError(OSError):
    """The peer could not be reached; the request was not sent, so it is safe to retry."""


def _closed_by_peer(sock: socket.socket) -> bool:
    """An idle kept-alive connection is readable only if the peer closed (or reset) it."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


@functools.lru_cache(maxsize=None)
def _signature(method) -> dict[str, tuple[tuple[type, ...], bool, tuple[type, ...]]]:
    """{argument: (accepted JSON types, None allowed, accepted item types of a list or
    ()}) of an rpc_ method, from its type hints; an argument whose hint is not a plain
    JSON type is not checked."""
    try:
        hints = typing.get_type_hints(method)
        params = inspect.signature(method).parameters
    except Exception:   # an unresolvable hint: check nothing rather than reject good calls
        return {}
    plain = {int: (int,), float: (int, float), str: (str,), bool: (bool,), list: (list,),
             dict: (dict,)}
    out = {}
    for name, hint in hints.items():
        if name == "return" or name not in params:
            continue
        allow_none = params[name].default is None
        options = typing.get_args(hint) if isinstance(hint, types.UnionType) \
            or typing.get_origin(hint) is typing.Union else (hint,)
        accepted: list[type] = []
        items: tuple[type, ...] = ()
        for option in options:
            if option is type(None):
                allow_none = True
                continue
            base = typing.get_origin(option) or option
            if base not in plain:
                accepted = []
                break
            accepted += plain[base]
            inner = typing.get_args(option)
            if base is list and len(inner) == 1 and (typing.get_origin(inner[0]) or inner[0]) in plain:
                items = plain[typing.get_origin(inner[0]) or inner[0]]
        if accepted:
            out[name] = (tuple(accepted), allow_none, items)
    return out


def argument_problem(method, args: dict) -> str | None:
    """Why `args` do not fit the rpc_ method's signature (missing, unknown, or of the
    wrong JSON type: a bool is not an int), or None. Checked before the handler runs, so
    a request with a path of 123 is refused instead of reaching the namespace."""
    try:
        inspect.signature(method).bind(**args)
    except TypeError as e:
        return str(e)
    for name, (accepted, allow_none, items) in _signature(getattr(method, "__func__", method)).items():
        if name not in args:
            continue
        value = args[name]
        if value is None and allow_none:
            continue
        if isinstance(value, bool) and bool not in accepted:
            return f"argument {name} must be {'/'.join(t.__name__ for t in accepted)}, not bool"
        if not isinstance(value, accepted):
            return (f"argument {name} must be {'/'.join(t.__name__ for t in accepted)}, "
                    f"not {type(value).__name__}")
        if items and isinstance(value, list):
            for i, x in enumerate(value):
                if isinstance(x, bool) and bool not in items or not isinstance(x, items):
                    return (f"argument {name}[{i}] must be "
                            f"{'/'.join(t.__name__ for t in items)}, not {type(x).__name__}")
    return None


class RpcServer:
    """A threaded TCP server calling `handler.rpc_<op>(**args)` for each request frame.

    A request it cannot take (a malformed frame, an unknown operation, arguments that do
    not fit the operation's signature) is answered with MalformedFrame and reported to
    `log_reject(op, error, reason)`, so the daemon's log shows what it refused."""

    def __init__(self, host: str, port: int, handler: Any, log_error: Callable[[str], None] = None,
                 log_reject: Callable[[Any, str, str], None] = None):
        self.handler = handler
        self.log_error = log_error or (lambda msg: None)
        self.log_reject = log_reject or (lambda op, error, reason: None)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, port))
        self.sock.listen(128)
        self.port = self.sock.getsockname()[1]
        self._closed = False

    def serve_forever(self) -> None:
        threading.Thread(target=self._accept_loop, daemon=True, name="rpc-accept").start()

    def _accept_loop(self) -> None:
        while not self._closed:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self._serve, args=(conn,), daemon=True, name="rpc-conn").start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            while True:
                try:
                    req = wire.recv_message(conn)
                except wire.MalformedFrame as e:
                    self._rejected(None, str(e))
                    self._reply_quietly(conn, {"id": None, "ok": False, "error": "MalformedFrame",
                                               "message": str(e)})
                    return
                except (OSError, EOFError):
                    return
                reply = self.dispatch(req)
                try:
                    wire.send_message(conn, reply)
                except OSError:
                    return

    def dispatch(self, req: dict) -> dict:
        rid, op, args = req.get("id"), req.get("op"), req.get("args", {})
        method = getattr(self.handler, f"rpc_{op}", None) if isinstance(op, str) else None
        if method is None or not isinstance(args, dict):
            message = f"unknown operation {op!r} or bad arguments"
            self._rejected(op, message)
            return {"id": rid, "ok": False, "error": "MalformedFrame", "message": message}
        problem = argument_problem(method, args)
        if problem is not None:
            self._rejected(op, f"{op}: {problem}")
            return {"id": rid, "ok": False, "error": "MalformedFrame", "message": f"{op}: {problem}"}
        try:
            return {"id": rid, "ok": True, "result": method(**args)}
        except HdfsError as e:
            return {"id": rid, "ok": False, "error": type(e).__name__, "message": str(e)}
        except TypeError as e:
            self._rejected(op, f"{op}: {e}")
            return {"id": rid, "ok": False, "error": "MalformedFrame", "message": f"{op}: {e}"}
        except Exception as e:  # a bug in a handler must not take the daemon down
            self.log_error(f"{op}: {traceback.format_exc()}")
            return {"id": rid, "ok": False, "error": "InternalError", "message": f"{op}: {e!r}"}

    def _rejected(self, op: Any, reason: str) -> None:
        try:
            self.log_reject(op if isinstance(op, str) else None, "MalformedFrame", reason[:500])
        except Exception:   # logging must never take the connection's thread down
            pass

    @staticmethod
    def _reply_quietly(conn: socket.socket, reply: dict) -> None:
        try:
            wire.send_message(conn, reply)
        except OSError:
            pass

    def close(self) -> None:
        self._closed = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


class RpcClient:
    """Calls one peer's RPC service over a kept-alive connection, reconnecting on failure."""

    _ids = itertools.count()

    def __init__(self, addr: str, connect_timeout: float = 20.0, rpc_timeout: float = 60.0):
        self.addr = addr
        self.connect_timeout, self.rpc_timeout = connect_timeout, rpc_timeout
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()

    def call(self, op: str, timeout: float | None = None, **args: Any) -> Any:
        with self._lock:
            rid = next(self._ids)
            if self._sock is not None and _closed_by_peer(self._sock):
                self._drop()   # e.g. the server restarted while the connection sat idle
            try:
                if self._sock is None:
                    try:
                        self._sock = wire.connect(self.addr, self.connect_timeout)
                    except OSError as e:
                        raise ConnectError(f"cannot connect to {self.addr}: {e}") from e
                self._sock.settimeout(timeout or self.rpc_timeout)
                wire.send_message(self._sock, {"id": rid, "op": op, "args": args})
                reply = wire.recv_message(self._sock)
            except BaseException:
                self._drop()
                raise
            if reply.get("id") != rid:
                self._drop()
                raise OSError(f"RPC {op}: reply for another call")
        if reply.get("ok"):
            return reply.get("result")
        raise remote_error(reply.get("error", "InternalError"), reply.get("message", ""))

    def _drop(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            except OSError:
                pass
            self._sock = None

    def close(self) -> None:
        with self._lock:
            self._drop()
