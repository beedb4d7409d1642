"""Mnemo: long-term memory for AI agents that audits what it recalls.

In-process (the embedded engine, offline by default)::

    from mnemo import Memory
    m = Memory("data", namespace="me")
    m.remember("[SEM] Northwind Labs | owner | Ben")
    m.remember("[SEM] Northwind Labs | owner | Carla")
    r = m.recall("who owns Northwind Labs", about="Northwind Labs | owner")
    assert r.decision == "act" and "Carla" in r.text

Against ``mnemo serve``, the same code with another constructor::

    from mnemo import Client
    m = Client("http://127.0.0.1:8080", token="…", namespace="me")

``AsyncMemory`` and ``AsyncClient`` are the same API for ``asyncio``. Integrations:
``mnemo.langgraph.MnemoStore`` (a LangGraph ``BaseStore``) and ``mnemo.tools`` (remember /
recall / forget as function-calling tools).
"""

from __future__ import annotations

from .client import AsyncClient, Client
from .errors import (
    BusyError,
    ConfigError,
    ConflictError,
    ConnectionFailedError,
    InvalidInputError,
    MnemoError,
    ModelError,
    NotFoundError,
    RateLimitedError,
    ReadOnlyError,
    UnauthorizedError,
    UnextractedError,
    UnsupportedError,
)
from .memory import AsyncMemory, Memory
from .types import (
    ActOn,
    Claim,
    ClaimValue,
    Escalation,
    ForgetMatch,
    ForgetPreview,
    History,
    MemoryRecord,
    Page,
    Plan,
    Recall,
    RecallLine,
    RememberResult,
    Turn,
    TurnResult,
    Why,
)

__version__ = "0.1.0"

__all__ = [
    "ActOn",
    "AsyncClient",
    "AsyncMemory",
    "BusyError",
    "Claim",
    "ClaimValue",
    "Client",
    "ConfigError",
    "ConflictError",
    "ConnectionFailedError",
    "Escalation",
    "ForgetMatch",
    "ForgetPreview",
    "History",
    "InvalidInputError",
    "Memory",
    "MemoryRecord",
    "MnemoError",
    "ModelError",
    "NotFoundError",
    "Page",
    "Plan",
    "RateLimitedError",
    "ReadOnlyError",
    "Recall",
    "RecallLine",
    "RememberResult",
    "Turn",
    "TurnResult",
    "UnauthorizedError",
    "UnextractedError",
    "UnsupportedError",
    "Why",
]
