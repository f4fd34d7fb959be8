"""Who may use ``ragkit serve``: API keys, the loopback rule, web-page origins, and how many
questions each key may have in flight.

- A server that listens beyond loopback must have a key (``check_exposure``); on loopback a
  key is optional, and enforced when given.
- A request carries its key as ``Authorization: Bearer <key>`` (HTTP and the WebSocket
  handshake alike); it is compared with every configured key in constant time
  (``hmac.compare_digest``). ``GET /health`` (liveness) needs no key; ``GET /ready`` without
  one answers only ``{"ready": ...}``.
- Each key is a *principal* (``key:`` and 8 hex digits of its SHA-256; ``local`` when the
  server has no keys): conversations and limits belong to it, and logs name it, never the key.
- A request must name the server by a host name it answers to (its ``Host`` header): a
  loopback name (``localhost``, ``127.0.0.1``, ``::1``), the address it listens on, or one
  given with ``--allowed-host``; any other gets 403 before any work is done. A web page that
  rebinds its own DNS name to 127.0.0.1 (DNS rebinding) makes the browser send that name, so
  it cannot reach a loopback server even though the page's origin and the Host agree.
- A request from a web page (an ``Origin`` header) is refused unless that origin is the
  server's own or one given with ``--cors-origin``: a page in the local user's browser cannot
  drive a loopback server behind their back.
"""

from __future__ import annotations

import hashlib
import hmac
import threading
from typing import Sequence

from ..config import is_loopback
from ..errors import InputError
from ..runtime.extras import requires_extra

with requires_extra("server"):
    from fastapi.responses import JSONResponse

LOCAL = "local"                      # the principal of a server without keys (loopback only)
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")    # the host names a loopback server answers to
ANY_HOST = "*"
OPEN_PATHS = {"/health", "/ready"}   # answered without a key (/ready: without its details)
MIN_KEY_CHARS = 16
KEY_HINT = "python -c 'import secrets; print(secrets.token_urlsafe(32))'"


# OpenAI's error types, for refusals on the OpenAI-compatible paths (/v1/...).
OPENAI_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                      404: "not_found_error", 408: "timeout_error", 413: "invalid_request_error",
                      429: "rate_limit_error"}


def error_body(path: str, status: int, message: str, code: str | None = None) -> dict:
    """The JSON of a refusal: ``{"error": message}`` (one line), or on the OpenAI-compatible
    paths (``/v1/...``) OpenAI's error object with the same message, which OpenAI clients
    read (``{"error": {"message", "type", "param", "code"}}``)."""
    if not path.startswith("/v1/"):
        return {"error": message}
    kind = OPENAI_ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def host_name(value: str) -> str:
    """The name a ``Host`` header (or an ``--allowed-host``) gives, without its port, lower-cased,
    without a trailing dot: ``LOCALHOST.:8000`` -> ``localhost``, ``[::1]:8000`` -> ``::1``."""
    value = value.strip().lower()
    if value.startswith("["):                     # an IPv6 address, maybe with a port
        return value[1:value.find("]")] if "]" in value else value[1:]
    if value.count(":") == 1:
        value = value.split(":", 1)[0]
    return value.rstrip(".")


def allowed_hosts(listen_host: str, extra: Sequence[str] = ()) -> frozenset[str]:
    """The host names a server listening on ``listen_host`` answers to: the loopback names, the
    address it listens on (unless it is every address, ``0.0.0.0`` or ``::``), and ``extra``
    (``--allowed-host``; ``*`` answers to any name)."""
    names = set(LOOPBACK_NAMES) | {host_name(h) for h in extra if h.strip()}
    listen = host_name(listen_host)
    if listen not in ("0.0.0.0", "::", ""):
        names.add(listen)
    return frozenset(names)


def check_allowed_hosts(values: Sequence[str]) -> list[str]:
    """``--allowed-host`` values, each a host name or address without scheme or path (or ``*``);
    InputError naming the first that is not."""
    for value in values:
        name = host_name(value)
        if value.strip() != ANY_HOST and (not name or "/" in value or " " in name or not name.isascii()):
            raise InputError(f"--allowed-host {value!r}: must be a host name or address (app.example, "
                             f"10.0.0.5), without scheme, port or path, or * for any")
    return list(values)


def check_keys(keys: list[str]) -> list[str]:
    """The configured keys, each long enough and sendable in a header; InputError otherwise."""
    for key in keys:
        if len(key) < MIN_KEY_CHARS or not key.isascii() or not key.isprintable() or " " in key:
            raise InputError(f"--api-key (or RAGKIT_API_KEY): must be at least {MIN_KEY_CHARS} printable ASCII "
                             f"characters without spaces, got {len(key)} characters (make one with {KEY_HINT})")
    return list(dict.fromkeys(keys))


def check_exposure(host: str, keys: list[str]) -> None:
    """Refuse to listen beyond loopback without a key (InputError, one line)."""
    if not keys and not is_loopback(host):
        raise InputError(f"--host {host}: listening beyond loopback needs --api-key or RAGKIT_API_KEY "
                         f"(make one with {KEY_HINT})")


def principal_of(key: str) -> str:
    return "key:" + hashlib.sha256(key.encode("ascii")).hexdigest()[:8]


def _bearer(headers: dict[bytes, bytes]) -> bytes | None:
    value = headers.get(b"authorization", b"")
    scheme, _, token = value.partition(b" ")
    if scheme.lower() != b"bearer":
        return None
    return token.strip() or None


class AccessGuard:
    """ASGI middleware: the host check (403), the origin check (403) and the key check (401),
    for HTTP and WebSocket alike; ``hosts``: the host names it answers to (``allowed_hosts``).
    It puts the request's principal in ``scope["ragkit.principal"]`` (None on an open path
    reached without a valid key)."""

    def __init__(self, app, keys: Sequence[str] = (), origins: Sequence[str] = (),
                 hosts: Sequence[str] = LOOPBACK_NAMES):
        self.app = app
        self.keys = [(k.encode("ascii"), principal_of(k)) for k in keys]
        self.origins = set(origins)
        self.hosts = frozenset(host_name(h) for h in hosts)

    def principal(self, headers: dict[bytes, bytes]) -> str | None:
        if not self.keys:
            return LOCAL
        given = _bearer(headers)
        if given is None:
            return None
        found = None
        for key, name in self.keys:          # every key compared: the time says nothing
            if hmac.compare_digest(given, key):
                found = name
        return found

    async def __call__(self, scope, receive, send):
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        headers = dict(scope.get("headers") or [])
        host = headers.get(b"host")
        name = host_name(host.decode("latin-1")) if host is not None else None
        if name is not None and ANY_HOST not in self.hosts and name not in self.hosts:
            name = name[:100]
            return await self.refuse(scope, receive, send, 403,
                                     f"host: {name!r} is not a name this server answers to "
                                     f"(allow it with --allowed-host)")
        origin = headers.get(b"origin")
        if origin is not None:
            text = origin.decode("latin-1")
            own = {f"{p}://{headers.get(b'host', b'').decode('latin-1')}" for p in ("http", "https")}
            if text not in self.origins and text not in own:
                return await self.refuse(scope, receive, send, 403,
                                         f"origin: {text} may not use this server (allow it with --cors-origin)")
        principal = self.principal(headers)
        scope["ragkit.principal"] = principal
        if principal is None and scope.get("path") not in OPEN_PATHS:
            why = ("the API key is not valid" if _bearer(headers) else
                   "send the API key as 'Authorization: Bearer <key>'")
            return await self.refuse(scope, receive, send, 401, f"authorization: {why}",
                                     {"WWW-Authenticate": "Bearer"})
        return await self.app(scope, receive, send)

    @staticmethod
    async def refuse(scope, receive, send, status: int, message: str, headers: dict | None = None):
        """A JSON error; on a WebSocket, as the handshake's HTTP response where the server
        can send one (uvicorn can), else a plain refusal (403)."""
        response = JSONResponse(error_body(scope.get("path", ""), status, message), status_code=status,
                                headers=headers)
        if scope["type"] == "websocket" and "websocket.http.response" not in scope.get("extensions", {}):
            return await send({"type": "websocket.close", "code": 1008})
        return await response(scope, receive, send)


class InFlight:
    """Questions being answered or waiting, per principal; ``enter`` refuses past ``limit``."""

    def __init__(self, limit: int):
        self.limit = limit
        self._count: dict[str, int] = {}
        self._lock = threading.Lock()

    def enter(self, principal: str) -> bool:
        with self._lock:
            if self._count.get(principal, 0) >= self.limit:
                return False
            self._count[principal] = self._count.get(principal, 0) + 1
            return True

    def leave(self, principal: str) -> None:
        with self._lock:
            self._count[principal] -= 1
            if not self._count[principal]:
                del self._count[principal]


class Connections:
    """Open WebSocket connections, per principal and in all; ``open`` refuses past either
    limit, with the reason (None: opened)."""

    def __init__(self, per_key: int, total: int):
        self.per_key, self.total = per_key, total
        self._count: dict[str, int] = {}
        self._lock = threading.Lock()

    def open(self, principal: str) -> str | None:
        with self._lock:
            if sum(self._count.values()) >= self.total:
                return f"connections: the server has {self.total} WebSocket connections open; try again later"
            if self._count.get(principal, 0) >= self.per_key:
                return (f"connections: {self.per_key} WebSocket connections of this key are open; close one "
                        f"(or ask several questions on one)")
            self._count[principal] = self._count.get(principal, 0) + 1
            return None

    def close(self, principal: str) -> None:
        with self._lock:
            self._count[principal] -= 1
            if not self._count[principal]:
                del self._count[principal]
