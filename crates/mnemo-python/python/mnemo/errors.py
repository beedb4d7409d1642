"""The errors of Mnemo, one class per kind, the same at every door.

The embedded engine raises them from the Rust error's kind (``mnemo_agent::ErrorKind``); the
HTTP client raises the same classes from the server's stable error code, so code written
against :class:`mnemo.Memory` catches the same exceptions against :class:`mnemo.Client`.

Every class derives from :class:`MnemoError`; the ones with a natural Python counterpart
derive from it too (``InvalidInputError`` is a ``ValueError``, ``NotFoundError`` a
``LookupError``), so generic handlers keep working.
"""

from __future__ import annotations

from ._native import (
    BusyError,
    ConfigError,
    ConflictError,
    InvalidInputError,
    MnemoError,
    ModelError,
    NotFoundError,
    RateLimitedError,
    ReadOnlyError,
    UnextractedError,
    UnsupportedError,
)


class UnauthorizedError(MnemoError, PermissionError):
    """The server refused the bearer token (HTTP 401), or the token does not reach the
    namespace or the operation (HTTP 403). Only the HTTP client raises it."""


class ConnectionFailedError(MnemoError, ConnectionError):
    """The server could not be reached, or did not answer with Mnemo's JSON (the message names
    the URL). Only the HTTP client raises it."""


__all__ = [
    "BusyError",
    "ConfigError",
    "ConflictError",
    "ConnectionFailedError",
    "InvalidInputError",
    "MnemoError",
    "ModelError",
    "NotFoundError",
    "RateLimitedError",
    "ReadOnlyError",
    "UnauthorizedError",
    "UnextractedError",
    "UnsupportedError",
]
