"""Mnemo in-process: the embedded engine, no server."""

from __future__ import annotations

import json
import os
import weakref
from typing import Any, Optional, Sequence, Union

from . import _native
from ._api import Api, AsyncApi

PathLike = Union[str, "os.PathLike[str]"]


def _json(s: str) -> Any:
    return json.loads(s)


def _lines(s: str) -> list[dict]:
    s = s.strip()
    if not s:
        return []
    if s.startswith("["):
        return json.loads(s)
    return [json.loads(line) for line in s.splitlines() if line.strip()]


# Memories open in this process. A child made by os.fork() inherits them without the engine's
# threads: they are disowned there (never used, never dropped, since dropping saves the index
# through threads the child does not have), and a call says to open a Memory in the child.
_OPEN: "weakref.WeakSet[Memory]" = weakref.WeakSet()
_DISOWNED: list = []


class _Forked:
    """What a Memory holds in a forked child instead of the parent's engine."""

    def __getattr__(self, name: str) -> Any:
        raise _native.MnemoError(
            "this Memory was opened before os.fork(); the engine belongs to the parent process: open a new "
            "Memory in the child"
        )


def _after_fork_in_child() -> None:
    for m in list(_OPEN):
        _DISOWNED.append(m._engine)
        m._engine = _Forked()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class Memory(Api):
    """Mnemo's engine in this process, configured like the CLI.

    ``Memory("data", namespace="me")`` opens (or creates) the data directory ``data`` with the
    embedded default: SQLite, the built-in index, the offline deterministic model; nothing is
    fetched, no key is needed. ``config`` names TOML files as ``mnemo --config`` does (later
    files override earlier ones); ``live=True`` is ``--live`` (an OpenAI-compatible endpoint
    from the environment: asking for live and not getting it is an error).

    The memory holds the data directory's write lock until :meth:`close` (or the end of a
    ``with`` block): a second process waits for it as it would for ``mnemo``. Calls are
    thread-safe and release the GIL while the engine works.
    """

    def __init__(
        self,
        data_dir: PathLike = "mnemo-data",
        *,
        namespace: str = "default",
        config: Optional[Sequence[PathLike]] = None,
        live: bool = False,
        read_only: bool = False,
    ) -> None:
        files = [os.fspath(c) for c in (config or [])]
        self._engine = _native.Engine(os.fspath(data_dir), namespace, files, live, read_only)
        self.namespace = namespace
        _OPEN.add(self)

    # -- the door ------------------------------------------------------------------------
    def _remember(self, ns, text, source, key, at):  # type: ignore[no-untyped-def]
        return _json(self._engine.remember(text, namespace=ns, source=source, idempotency_key=key, at=at))

    def _remember_messages(self, ns, messages, source, key, at):  # type: ignore[no-untyped-def]
        return _json(
            self._engine.remember_messages(messages, namespace=ns, source=source, idempotency_key=key, at=at)
        )

    def _recall(self, ns, query, budget, mode, about, raw, as_of, since, until, valid_at):  # type: ignore[no-untyped-def]
        return _json(
            self._engine.recall(
                query,
                namespace=ns,
                budget=budget,
                mode=mode,
                about=about,
                raw=raw,
                as_of=as_of,
                since=since,
                until=until,
                valid_at=valid_at,
            )
        )

    def _history(self, ns, claim):  # type: ignore[no-untyped-def]
        return _json(self._engine.history(claim, namespace=ns))

    def _turn(self, ns, text, budget, about):  # type: ignore[no-untyped-def]
        return _json(self._engine.turn(text, namespace=ns, budget=budget, about=about))

    def _forget(self, ns, command, dry_run, include_pinned):  # type: ignore[no-untyped-def]
        return _json(self._engine.forget(command, namespace=ns, dry_run=dry_run, include_pinned=include_pinned))

    def _why(self, ns, id):  # type: ignore[no-untyped-def]
        return _json(self._engine.why(id, namespace=ns))

    def _page(self, ns, after, limit, include_tombstoned):  # type: ignore[no-untyped-def]
        return _json(self._engine.list(namespace=ns, after=after, limit=limit, include_tombstoned=include_tombstoned))

    def _export(self, ns, include_tombstoned):  # type: ignore[no-untyped-def]
        return _lines(self._engine.export(namespace=ns, include_tombstoned=include_tombstoned))

    def _escalations(self, ns, open_only):  # type: ignore[no-untyped-def]
        return _json(self._engine.escalations(namespace=ns, open_only=open_only))

    def _answer(self, ns, id, value):  # type: ignore[no-untyped-def]
        return _json(self._engine.answer(id, value, namespace=ns))

    def _dismiss(self, ns, id):  # type: ignore[no-untyped-def]
        return _json(self._engine.dismiss(id, namespace=ns))

    def _erase(self, ns, what, reason, subject, dry_run):  # type: ignore[no-untyped-def]
        return _json(self._engine.erase(what, reason=reason, namespace=ns, subject=subject, dry_run=dry_run))

    # -- the engine ----------------------------------------------------------------------
    @property
    def model(self) -> str:
        """Who answers model calls, as the seam says (e.g. the offline fake model)."""
        return self._engine.model

    @property
    def data_dir(self) -> str:
        return self._engine.data_dir

    def namespaces(self) -> list[str]:
        """The namespaces the store holds memories or turns in."""
        return list(_json(self._engine.namespaces()))

    def close(self) -> None:
        """Release the data directory (its lock, the index). Later calls raise MnemoError."""
        self._engine.close()

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Memory({self.data_dir!r}, namespace={self.namespace!r})"


class AsyncMemory(AsyncApi):
    """:class:`Memory` for ``asyncio``: ``await m.recall(…)`` runs on a worker thread while the
    engine releases the GIL, so the event loop never blocks."""

    def __init__(self, data_dir: PathLike = "mnemo-data", **kw: Any) -> None:
        super().__init__(Memory(data_dir, **kw))

    @property
    def model(self) -> str:
        return self._sync.model  # type: ignore[attr-defined]

    @property
    def data_dir(self) -> str:
        return self._sync.data_dir  # type: ignore[attr-defined]

    async def namespaces(self) -> list[str]:
        import asyncio

        return await asyncio.to_thread(self._sync.namespaces)  # type: ignore[attr-defined]
