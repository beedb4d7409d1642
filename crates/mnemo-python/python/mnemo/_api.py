"""The one Python API over both doors.

:class:`Api` holds every method an agent calls (``remember``, ``recall``, ``turn``, ``forget``,
``why``, ``list``, ``export``, ``escalations``, ``answer``, ``dismiss``) and reads the answers
into the typed objects of :mod:`mnemo.types`. It knows no transport: a door subclass
(:class:`mnemo.Memory`, the engine in-process; :class:`mnemo.Client`, the HTTP server)
implements the ``_…`` primitives, each returning the JSON the door answered. The rules (what
an id, a budget, a claim key may be) are the engine's, applied behind both doors, so the
same call is accepted or refused the same way at both.

:class:`AsyncApi` is the same API for ``asyncio``: each call runs the blocking one on a
worker thread (``asyncio.to_thread``); the engine releases the GIL while it works, so the
event loop keeps running.
"""

from __future__ import annotations

import asyncio
import re
from datetime import datetime
from typing import Any, Iterable, Literal, Mapping, Optional, Sequence, Union, overload

from .errors import InvalidInputError
from .types import (
    Claim,
    Escalation,
    ForgetPreview,
    History,
    MemoryRecord,
    Page,
    Recall,
    RememberResult,
    TurnResult,
    Why,
)

Message = Mapping[str, Any]
"""A chat message: ``{"role": "user" | "assistant" | …, "content": str, "timestamp"?: datetime | str}``."""

About = Union[str, Sequence[str], Claim, None]
"""What a task is about: ``"Northwind Labs | owner"``, ``("Northwind Labs", "owner")`` or a Claim."""

PAGE = 100


def time_arg(t: Union[datetime, str, None], what: str = "timestamp") -> Optional[str]:
    """A time as the engine takes it: RFC 3339 text (a ``YYYY-MM-DD`` date is midnight UTC).
    A naive ``datetime`` is refused: its zone would be a guess."""
    if t is None:
        return None
    if isinstance(t, datetime):
        if t.tzinfo is None or t.utcoffset() is None:
            raise InvalidInputError(
                f"{what} {t.isoformat()} has no time zone; pass an aware datetime, e.g. datetime.now(timezone.utc)"
            )
        return t.isoformat()
    if isinstance(t, str):
        return t
    raise InvalidInputError(f"{what} must be a datetime or RFC 3339 text, got {type(t).__name__}")


def about_arg(about: About) -> Optional[str]:
    """``entity | attribute`` text from the forms :data:`About` allows."""
    if about is None:
        return None
    if isinstance(about, Claim):
        return f"{about.entity} | {about.attribute}"
    if isinstance(about, str):
        return about
    parts = list(about)
    if len(parts) != 2 or not all(isinstance(p, str) for p in parts):
        raise InvalidInputError(f"about must be 'entity | attribute' or (entity, attribute), got {about!r}")
    return f"{parts[0]} | {parts[1]}"


_ROLE = re.compile(r"^[A-Za-z][A-Za-z0-9_.:-]{0,63}$")


def _instant(text: str) -> Optional[datetime]:
    """RFC 3339 text or a bare date as an aware datetime; None when Python cannot read it (the
    engine then names what is wrong)."""
    t = text.strip()
    if re.fullmatch(r"\d{4}-\d\d-\d\d", t):
        t += "T00:00:00+00:00"
    try:
        d = datetime.fromisoformat(t.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    return d if d.tzinfo is not None else None


def messages_arg(messages: Iterable[Message]) -> list[dict]:
    """Chat messages checked before anything is written, as the engine checks them: each
    becomes one turn, in order, so a list the engine would refuse is refused here too, at both
    doors (over HTTP the messages are sent one by one and a refusal half-way would leave a part
    written)."""
    out = []
    last: Optional[tuple[int, datetime]] = None
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping):
            raise InvalidInputError(f"message {i} is a {type(m).__name__}; a message is {{'role': …, 'content': …}}")
        role, content = m.get("role"), m.get("content")
        if not isinstance(role, str) or not _ROLE.match(role.strip()):
            raise InvalidInputError(
                f"message {i}: role {role!r} is not a role: one word such as user, assistant, system or tool"
            )
        if not isinstance(content, str) or not content.strip():
            raise InvalidInputError(f"message {i}: content must be non-empty text")
        msg = {"role": role.strip(), "content": content}
        ts = time_arg(m.get("timestamp"), f"message {i}'s timestamp")
        if ts is not None:
            when = _instant(ts)
            if when is None:
                raise InvalidInputError(
                    f"message {i}: timestamp {ts!r} is neither a date (YYYY-MM-DD) nor an RFC 3339 time"
                )
            if last is not None and when < last[1]:
                raise InvalidInputError(
                    f"message {i} is at {ts}, before message {last[0]}: messages are remembered in order, and time "
                    "only moves forward in a namespace"
                )
            last = (i, when)
            msg["timestamp"] = ts
        out.append(msg)
    if not out:
        raise InvalidInputError("messages is empty: send at least one message to remember")
    return out


class Api:
    """Mnemo's memory API (see :class:`mnemo.Memory` and :class:`mnemo.Client`)."""

    namespace: str

    # -- the primitives a door implements: each returns the door's JSON -----------------
    def _remember(self, ns: str, text: str, source: Optional[str], key: Optional[str], at: Optional[str]) -> Any:
        raise NotImplementedError

    def _remember_messages(
        self, ns: str, messages: list[dict], source: Optional[str], key: Optional[str], at: Optional[str]
    ) -> list:
        raise NotImplementedError

    def _recall(
        self,
        ns: str,
        query: str,
        budget: Optional[int],
        mode: Optional[str],
        about: Optional[str],
        raw: bool,
        as_of: Optional[str],
        since: Optional[str],
        until: Optional[str],
        valid_at: Optional[str],
    ) -> Any:
        raise NotImplementedError

    def _history(self, ns: str, claim: str) -> Any:
        raise NotImplementedError

    def _turn(self, ns: str, text: str, budget: Optional[int], about: Optional[str]) -> Any:
        raise NotImplementedError

    def _forget(self, ns: str, command: str, dry_run: bool, include_pinned: bool) -> Any:
        raise NotImplementedError

    def _why(self, ns: str, id: str) -> Any:
        raise NotImplementedError

    def _page(self, ns: str, after: Optional[str], limit: int, include_tombstoned: bool) -> Any:
        raise NotImplementedError

    def _export(self, ns: str, include_tombstoned: bool) -> list:
        raise NotImplementedError

    def _escalations(self, ns: str, open_only: bool) -> Any:
        raise NotImplementedError

    def _answer(self, ns: str, id: str, value: str) -> Any:
        raise NotImplementedError

    def _dismiss(self, ns: str, id: str) -> Any:
        raise NotImplementedError

    def _erase(self, ns: str, what: str, reason: str, subject: bool, dry_run: bool) -> Any:
        raise NotImplementedError

    # -- the API -------------------------------------------------------------------------
    def _ns(self, namespace: Optional[str]) -> str:
        return self.namespace if namespace is None else namespace

    def remember(
        self,
        what: Union[str, Iterable[Message]],
        *,
        source: Optional[str] = None,
        timestamp: Union[datetime, str, None] = None,
        idempotency_key: Optional[str] = None,
        namespace: Optional[str] = None,
    ) -> Any:
        """Remember a turn: text (tagged lines such as ``[SEM] Northwind Labs | owner | Ben``
        for the offline model, or prose), or chat messages ``[{"role", "content",
        "timestamp"?}]``, each its own turn in order.

        A newer value for a fact supersedes the old one, which is tombstoned with the reason,
        never deleted. ``timestamp`` dates the turn (time only moves forward in a namespace;
        at most a day ahead of the clock); ``idempotency_key`` makes a retry safe. Returns a
        :class:`RememberResult`, or a list of them for messages.
        """
        ns = self._ns(namespace)
        at = time_arg(timestamp)
        if isinstance(what, str):
            return RememberResult.of(self._remember(ns, what, source, idempotency_key, at))
        if isinstance(what, (bytes, bytearray)):
            raise InvalidInputError("remember takes text (str) or chat messages, not bytes: decode it first")
        msgs = messages_arg(what)
        return [RememberResult.of(r) for r in self._remember_messages(ns, msgs, source, idempotency_key, at)]

    def recall(
        self,
        query: str,
        *,
        budget: Optional[int] = None,
        mode: Optional[str] = None,
        about: About = None,
        raw: bool = False,
        namespace: Optional[str] = None,
        as_of: Union[datetime, str, None] = None,
        since: Union[datetime, str, None] = None,
        until: Union[datetime, str, None] = None,
        valid_at: Union[datetime, str, None] = None,
    ) -> Recall:
        """Recall memories for ``query`` into a token ``budget``, re-check verifiable claims
        against the systems of record, grade the pack and decide ``act`` or ``escalate``.

        ``mode``: ``hybrid`` (default), ``lexical`` or ``dense``. ``about``: the claim the task
        is about (``"entity | attribute"``). ``raw``: plain retrieval, no grade and no decision.
        ``as_of``: what memory held at that past time instead of now (graded as of then,
        without asking the systems of record; no escalation is raised). ``since`` / ``until``:
        only the episodes recorded in that window (facts and rules are not windowed).
        ``valid_at``: what was true in the world at that time, by the validity intervals the
        turns stated (replaced values included where they held).
        """
        if budget is not None and (not isinstance(budget, int) or isinstance(budget, bool) or budget < 0):
            raise InvalidInputError(f"budget must be a whole number of tokens ≥ 0, got {budget!r}")
        times = (
            time_arg(as_of, "as_of"),
            time_arg(since, "since"),
            time_arg(until, "until"),
            time_arg(valid_at, "valid_at"),
        )
        return Recall.of(self._recall(self._ns(namespace), query, budget, mode, about_arg(about), bool(raw), *times))

    def history(self, claim: About, *, namespace: Optional[str] = None) -> History:
        """The values a claim (``"entity | attribute"``) has had, oldest first: when memory
        recorded each, when and why it stopped holding it, and its sources."""
        key = about_arg(claim)
        if key is None:
            raise InvalidInputError("history needs a claim: \"entity | attribute\"")
        return History.of(self._history(self._ns(namespace), key))

    def turn(
        self,
        text: str,
        *,
        budget: Optional[int] = None,
        about: About = None,
        namespace: Optional[str] = None,
    ) -> TurnResult:
        """An agent turn: remember ``text``, recall with it as the query, assess, and on ACT plan
        from the pack (the plan checked against it), on ESCALATE record an escalation a human
        answers."""
        return TurnResult.of(self._turn(self._ns(namespace), text, budget, about_arg(about)))

    @overload
    def forget(
        self,
        command: str,
        *,
        dry_run: Literal[False] = False,
        include_pinned: bool = False,
        namespace: Optional[str] = None,
    ) -> RememberResult: ...

    @overload
    def forget(
        self, command: str, *, dry_run: Literal[True], include_pinned: bool = False, namespace: Optional[str] = None
    ) -> ForgetPreview: ...

    def forget(
        self, command: str, *, dry_run: bool = False, include_pinned: bool = False, namespace: Optional[str] = None
    ) -> Union[RememberResult, ForgetPreview]:
        """Forget exactly what ``command`` designates (``"entity | attribute"`` or free text): the
        memories are tombstoned with the command as the reason, never deleted. Free text takes
        only memories about it (a claim on it, or its own words; not a mention inside a URL, an
        e-mail address, a path or code), and a pinned one only with ``include_pinned``.
        ``dry_run=True`` writes nothing and returns a :class:`ForgetPreview`: what would be
        forgotten and kept, and why each matched."""
        j = self._forget(self._ns(namespace), command, bool(dry_run), bool(include_pinned))
        return ForgetPreview.of(j) if dry_run else RememberResult.of(j)

    def why(self, id: str, *, namespace: Optional[str] = None) -> Why:
        """A memory's history: the turns it came from, what reinforced it, and if it was
        forgotten, why, when and what superseded it. ``str()`` of it is the explanation."""
        if isinstance(id, bool) or not isinstance(id, (str, int)):
            raise InvalidInputError(f'id must be a memory id such as "m42" or an int, got {type(id).__name__}')
        return Why.of(self._why(self._ns(namespace), str(id)))

    def page(
        self,
        *,
        after: Optional[str] = None,
        limit: int = 20,
        include_tombstoned: bool = False,
        namespace: Optional[str] = None,
    ) -> Page:
        """One page of memories by id; ``next_after`` of a page is ``after`` of the next."""
        return Page.of(self._page(self._ns(namespace), after, limit, include_tombstoned))

    def list(
        self,
        *,
        all: bool = False,
        limit: Optional[int] = None,
        after: Optional[str] = None,
        namespace: Optional[str] = None,
    ) -> list[MemoryRecord]:
        """The namespace's memories by id: active ones, or with ``all=True`` tombstoned ones too
        (as ``mnemo list --all``). Every memory unless ``limit`` (then one page from ``after``)."""
        ns = self._ns(namespace)
        if limit is not None:
            return self.page(after=after, limit=limit, include_tombstoned=all, namespace=ns).memories
        out: list[MemoryRecord] = []
        cursor = after
        while True:
            p = self.page(after=cursor, limit=PAGE, include_tombstoned=all, namespace=ns)
            out.extend(p.memories)
            if not p.next_after:
                return out
            cursor = p.next_after

    def export(self, *, all: bool = False, namespace: Optional[str] = None) -> list[dict]:
        """Every memory of the namespace as the export's JSON records (``all=True``: tombstoned
        ones too)."""
        return self._export(self._ns(namespace), all)

    def escalations(self, *, all: bool = False, namespace: Optional[str] = None) -> list[Escalation]:
        """The namespace's open escalations (``all=True``: answered and dismissed ones too)."""
        body = self._escalations(self._ns(namespace), not all)
        items = body.get("escalations", []) if isinstance(body, dict) else body
        return [Escalation.of(e) for e in items]

    def answer(self, id: str, value: str, *, namespace: Optional[str] = None) -> dict:
        """A human's answer to an escalation: recorded as their word on the escalation's claim,
        which memory then trusts most."""
        return self._answer(self._ns(namespace), str(id), value)

    def erase(
        self, what: str, *, reason: str, subject: bool = False, dry_run: bool = False, namespace: Optional[str] = None
    ) -> dict:
        """Erase for good (unlike forget): ``what`` is ``"m42"``, ``"t17"``, ``"entity |
        attribute"`` (every version), or with ``subject=True`` an entity. The content leaves the
        store, the index, the raw turns, the escalation ledger and the recall cache; a
        content-free record (time, reason) stays. Irreversible: try ``dry_run=True`` first. Over
        HTTP the token needs the ``erase`` scope. Answers ``{"principal", "report", "text"}``."""
        if not isinstance(reason, str) or not reason.strip():
            raise InvalidInputError("erase needs a reason (it is kept in the erasure record)")
        return self._erase(self._ns(namespace), str(what), reason, bool(subject), bool(dry_run))

    def dismiss(self, id: str, *, namespace: Optional[str] = None) -> dict:
        """Close an escalation without an answer: nothing is recorded in memory."""
        return self._dismiss(self._ns(namespace), str(id))


class AsyncApi:
    """The same API for ``asyncio``: every method is a coroutine running the blocking call on
    a worker thread, so the event loop is never blocked."""

    def __init__(self, sync: Api) -> None:
        self._sync = sync

    @property
    def namespace(self) -> str:
        return self._sync.namespace

    async def remember(self, what: Union[str, Iterable[Message]], **kw: Any) -> Any:
        if not isinstance(what, str):
            what = list(what)  # read here, not on the worker thread
        return await asyncio.to_thread(self._sync.remember, what, **kw)

    async def recall(self, query: str, **kw: Any) -> Recall:
        return await asyncio.to_thread(self._sync.recall, query, **kw)

    async def turn(self, text: str, **kw: Any) -> TurnResult:
        return await asyncio.to_thread(self._sync.turn, text, **kw)

    async def forget(self, command: str, **kw: Any) -> Any:
        return await asyncio.to_thread(self._sync.forget, command, **kw)

    async def why(self, id: str, **kw: Any) -> Why:
        return await asyncio.to_thread(self._sync.why, id, **kw)

    async def history(self, claim: About, **kw: Any) -> History:
        return await asyncio.to_thread(self._sync.history, claim, **kw)

    async def page(self, **kw: Any) -> Page:
        return await asyncio.to_thread(self._sync.page, **kw)

    async def list(self, **kw: Any) -> list[MemoryRecord]:
        return await asyncio.to_thread(self._sync.list, **kw)

    async def export(self, **kw: Any) -> list[dict]:
        return await asyncio.to_thread(self._sync.export, **kw)

    async def escalations(self, **kw: Any) -> list[Escalation]:
        return await asyncio.to_thread(self._sync.escalations, **kw)

    async def answer(self, id: str, value: str, **kw: Any) -> dict:
        return await asyncio.to_thread(self._sync.answer, id, value, **kw)

    async def dismiss(self, id: str, **kw: Any) -> dict:
        return await asyncio.to_thread(self._sync.dismiss, id, **kw)

    async def erase(self, what: str, **kw: Any) -> dict:
        return await asyncio.to_thread(self._sync.erase, what, **kw)

    async def close(self) -> None:
        await asyncio.to_thread(self._sync.close)  # type: ignore[attr-defined]

    async def __aenter__(self) -> "AsyncApi":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()
