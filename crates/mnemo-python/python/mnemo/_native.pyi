"""Mnemo's embedded engine, compiled from Rust (crates/mnemo-python/src/lib.rs).

A local door, like the ``mnemo`` command line: an :class:`Engine` opens a data directory with a
config (the embedded default when none is named) and holds its write lock until closed (a
``read_only`` Engine holds none). Each
call answers the JSON text the HTTP API answers for the same call (``mnemo.types`` reads it),
and releases the GIL while the engine works, so threads and ``asyncio.to_thread`` run beside
it. Errors are the exception classes below, chosen by the Rust error's kind; the message is
the error's whole chain on one line. Nothing is printed; logs go to stderr only when
``RUST_LOG`` or ``MNEMO_LOG`` is set (e.g. ``MNEMO_LOG=info``).
"""

from __future__ import annotations

from os import PathLike
from types import TracebackType
from typing import Any, Mapping, Optional, Sequence, Union

__version__: str
BUILD_PROFILE: str
"""``release`` or ``debug``: the cargo profile that compiled the module (benchmarks need release)."""

class MnemoError(Exception):
    """Every error of Mnemo (also: a call on a closed Engine). The message is the error's whole
    chain on one line."""

class InvalidInputError(MnemoError, ValueError):
    """The input is refused (the message names what is wrong): a bad mode, claim key, id,
    budget, time, an empty text. Fix it and send it again."""

class NotFoundError(MnemoError, LookupError):
    """No such memory, turn or escalation in this namespace."""

class ConflictError(MnemoError):
    """The call contradicts what is recorded: an idempotency key used before with another text,
    an escalation already answered or dismissed."""

class BusyError(MnemoError):
    """Another writer holds the data directory (``MNEMO_LOCK_TIMEOUT_SECS`` sets the wait,
    default 30 s), the store or the index, or (over HTTP) the server sheds requests above its
    limit (``overloaded``): retrying later may work."""

class ReadOnlyError(MnemoError):
    """The store or index cannot be written here, or the Engine was opened ``read_only``."""

class RateLimitedError(MnemoError):
    """The model endpoint asked to slow down, or (over HTTP) the token made its requests for the
    server's window: back off and retry."""

class ModelError(MnemoError):
    """A model call failed (the endpoint, its answer, the embedder)."""

class UnextractedError(MnemoError):
    """The turn is recorded but nothing was derived from it (the model failed);
    ``mnemo reextract`` retries it."""

class ConfigError(MnemoError):
    """A configuration file, setting, kind or plugin is wrong, or the model client asked for
    cannot be had (``live=True`` without its API key)."""

class UnsupportedError(MnemoError):
    """What was asked is not something this backend or model does."""

_Path = Union[str, "PathLike[str]"]
_Id = Union[str, int]

class Engine:
    """Mnemo's engine over one data directory, in this process.

    ``config`` names TOML files as ``mnemo --config`` does (later ones override earlier ones;
    none: the embedded default — SQLite, the built-in index, the offline deterministic model).
    ``live=True`` is ``mnemo --live``: asking for the live client without its key is a
    :class:`ConfigError`. The Engine holds the data directory's write lock until
    :meth:`close`: a second writer waits ``MNEMO_LOCK_TIMEOUT_SECS`` (default 30 s), then gets
    :class:`BusyError`. ``read_only=True`` never keeps the lock: it reads beside a writer that
    holds it (a running ``mnemo serve``), a writer can start beside it at any time, and it
    refuses every write with :class:`ReadOnlyError` (with no writer present, opening first
    creates the store of a new directory and catches its index up, holding the lock only for
    that).

    Sources follow the local door's rule: a ``source`` declared in config (``[sources]
    declared``) counts as itself; any other label counts as the operator, ``"user"``, and the
    report's notes say so.
    """

    def __init__(
        self,
        data_dir: _Path,
        namespace: str = "default",
        config: Optional[Sequence[_Path]] = None,
        live: bool = False,
        read_only: bool = False,
    ) -> None: ...
    @property
    def namespace(self) -> str:
        """The namespace calls use when they name none."""
    @property
    def model(self) -> str:
        """Who answers model calls, as the model seam describes itself (e.g. ``model client: fake
        (offline, deterministic; …)``)."""
    @property
    def data_dir(self) -> str:
        """The data directory, as given."""
    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
    def remember(
        self,
        text: str,
        *,
        namespace: Optional[str] = None,
        source: Optional[str] = None,
        idempotency_key: Optional[str] = None,
        at: Optional[str] = None,
    ) -> str:
        """Remember a turn. ``text`` is tagged lines (``[SEM] entity | attribute | value``,
        ``[PROC] …``, ``[EPI] …``, ``[FORGET] entity | attribute``) for the offline model, or
        prose for a live one. ``idempotency_key`` makes a retry write nothing again (the same
        key with another text is a :class:`ConflictError`). ``at`` dates the turn: RFC 3339 or
        ``YYYY-MM-DD`` (midnight UTC), at most a day after the clock, never before the
        namespace's last turn.

        Returns the report as JSON: ``{"status", "turn", "outcomes", "notes", "model"}`` (the
        ``report`` of ``POST remember``)."""
    def remember_messages(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        namespace: Optional[str] = None,
        source: Optional[str] = None,
        idempotency_key: Optional[str] = None,
        at: Optional[str] = None,
    ) -> str:
        """Remember a conversation: ``messages`` are dicts ``{"role", "content", "timestamp"?}``
        (``timestamp`` as ``at``), each remembered as its own turn, in order. Role ``user`` is
        said by ``source``; any other role (``assistant``, ``system``, ``tool``) counts by the
        source rule (declared: itself; else the operator, with a note). A message's time is its
        timestamp, else ``at``, else now. Everything is checked before the first turn is
        written (an empty list or content, a role that is not one word, times going backwards
        are :class:`InvalidInputError` naming the message). With ``idempotency_key``, message
        ``i`` is written under ``"{key}#{i}"``.

        Returns a JSON array of reports, one per message."""
    def recall(
        self,
        query: str,
        *,
        namespace: Optional[str] = None,
        budget: Optional[int] = None,
        mode: Optional[str] = None,
        about: Optional[str] = None,
        raw: bool = False,
        detail: str = "compact",
        as_of: Optional[str] = None,
        since: Optional[str] = None,
        until: Optional[str] = None,
        valid_at: Optional[str] = None,
    ) -> str:
        """Recall memories for ``query`` into a token ``budget``, re-check verifiable claims
        against the systems of record, grade the pack and decide ACT or ESCALATE (an
        escalation is recorded). ``mode``: ``hybrid``, ``lexical`` (``bm25``) or ``dense``
        (``vector``); ``about``: the claim the task is about, ``"entity | attribute"``;
        ``raw``: plain retrieval (no grade, no decision); ``as_of`` (RFC 3339 or a date): what
        memory held at that past time instead of now; ``since`` / ``until``: only the episodes
        recorded in that window.

        Returns the JSON of ``POST recall``: with ``detail="compact"`` what an agent reads
        (``memories`` within the budget, ``decision``, ``notes`` …); with ``"full"``
        ``{"pack", "assessment", "verdict", "action"}``."""
    def turn(
        self,
        text: str,
        *,
        namespace: Optional[str] = None,
        source: Optional[str] = None,
        budget: Optional[int] = None,
        about: Optional[str] = None,
        detail: str = "compact",
    ) -> str:
        """An agent turn: remember ``text`` (said by ``source``), recall with it as the query,
        assess, then on ACT plan from the pack (the plan checked against it), on ESCALATE record
        an escalation a human answers.

        Returns the JSON of ``POST turn``: ``{"principal", "remembered", "recall", "text"}``
        (``text`` the turn's prompt-ready text; ``recall`` carries its own ``text`` too, as
        ``recall`` answers it), or with ``detail="full"`` ``{"principal", "turn"}``."""
    def forget(
        self, command: str, *, namespace: Optional[str] = None, dry_run: bool = False, include_pinned: bool = False
    ) -> str:
        """Forget exactly what ``command`` designates: ``"entity | attribute"``, or free text
        the model resolves (only memories about it; a pinned one only with
        ``include_pinned``). Memories are tombstoned with the command as the reason, never
        deleted. ``dry_run`` writes nothing.

        Returns the JSON of ``POST forget``: ``{"principal", "report"}``, or with ``dry_run``
        ``{"principal", "preview", "text"}``."""
    def erase(
        self, what: str, *, reason: str, namespace: Optional[str] = None, subject: bool = False, dry_run: bool = False
    ) -> str:
        """Erase for good (unlike forget): ``what`` is ``"m42"``, ``"t17"``,
        ``"entity | attribute"`` (every version), or with ``subject`` an entity. The content
        leaves the store, the index, the raw turns and the recall cache; a content-free record
        (time, reason) stays. Irreversible: try ``dry_run`` first.

        Returns the JSON of ``POST erase``: ``{"principal", "report", "text"}``."""
    def history(self, claim: str, *, namespace: Optional[str] = None) -> str:
        """The values a claim (``"entity | attribute"``) has had, oldest first: when memory
        recorded each, when and why it stopped holding it, and its sources.

        Returns the JSON of ``GET history``: ``{"history": {"claim", "values", "notes"},
        "text"}``."""
    def why(self, id: _Id, *, namespace: Optional[str] = None) -> str:
        """A memory's history: the turns it came from, what reinforced it, and if tombstoned
        why, when and what superseded it. ``id``: ``"m42"``, ``"42"`` or a stored number (a
        turn id, or an id of another type such as a float, is an :class:`InvalidInputError`,
        an unknown one a :class:`NotFoundError`).

        Returns the JSON of ``GET memories/{id}``: ``{"why": {"memory", "events", "turns",
        "superseded_by"}}``."""
    def list(
        self,
        *,
        namespace: Optional[str] = None,
        after: Optional[str] = None,
        limit: int = 20,
        include_tombstoned: bool = False,
    ) -> str:
        """One page of the namespace's memories by id, after the memory ``after`` names (the
        previous page's ``next_after``); ``limit`` 1 to 1000.

        Returns the JSON of ``GET memories``: ``{"memories", "next_after"}``."""
    def export(self, *, namespace: Optional[str] = None, include_tombstoned: bool = False) -> str:
        """Every memory of the namespace as JSON lines, one memory per line (no embedding
        vectors): the body of ``GET export``."""
    def escalations(self, *, namespace: Optional[str] = None, open_only: bool = True) -> str:
        """The namespace's escalations, oldest first: the open ones, or with
        ``open_only=False`` answered and dismissed ones too.

        Returns the JSON of ``GET escalations``: ``{"escalations": […]}``."""
    def answer(self, id: str, value: str, *, namespace: Optional[str] = None, by: Optional[str] = None) -> str:
        """Answer the open escalation ``id`` (``"e3"``) as a human: ``value`` is recorded as
        their word on the escalation's claim, and the escalation is closed (answering a closed
        one is a :class:`ConflictError`). ``by`` may be left out or name the operator
        (``"user"``).

        Returns the JSON of ``POST escalations/{id}/answer``: ``{"escalation", "remembered",
        "notes"}``."""
    def dismiss(self, id: str, *, namespace: Optional[str] = None, by: Optional[str] = None) -> str:
        """Dismiss the open escalation ``id`` as a human: it is closed and nothing is recorded.

        Returns the JSON of ``POST escalations/{id}/dismiss``: the escalation."""
    def namespaces(self) -> str:
        """The namespaces that hold memories or turns, as a JSON array of names."""
    def close(self) -> None:
        """Wait for calls in flight, save the index and release the data directory's lock. Any
        later call raises :class:`MnemoError` ("closed"); closing again does nothing."""
    def __enter__(self) -> Engine: ...
    def __exit__(
        self,
        exc_type: Optional[type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None: ...
    def _time_recall(
        self, query: str, n: int, *, namespace: Optional[str] = None, budget: Optional[int] = None
    ) -> list[float]:
        """Benchmark helper: run the same compact recall ``n`` times inside Rust (the path of
        :meth:`recall`: the door and the JSON text) and return the seconds each took, measured
        with ``std::time::Instant``, the GIL released throughout."""
