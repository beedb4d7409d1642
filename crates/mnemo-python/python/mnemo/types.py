"""Typed answers of Mnemo, built from the JSON every door returns.

The embedded engine and the HTTP server answer with the same JSON; these classes read it, so
the same code runs against both. Every object keeps the JSON it was read from in ``raw``
(fields added by a newer server are there before this package names them). Ids are short
strings: ``m42`` for a memory, ``t17`` for a turn, ``e3`` for an escalation. Times are
timezone-aware ``datetime`` objects in UTC.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Optional


def _time(ms: Any) -> Optional[datetime]:
    """A store time (milliseconds since the Unix epoch) as an aware UTC datetime."""
    if ms is None:
        return None
    return datetime.fromtimestamp(int(ms) / 1000.0, tz=timezone.utc)


@dataclass(slots=True)
class Claim:
    """A fact as ``entity | attribute | value``: a newer value for the same entity and
    attribute supersedes the old one."""

    entity: str
    attribute: str
    value: str

    @staticmethod
    def of(j: Optional[dict]) -> Optional["Claim"]:
        if not j:
            return None
        return Claim(entity=j["entity"], attribute=j["attribute"], value=j["value"])

    def __str__(self) -> str:
        return f"{self.entity} | {self.attribute} | {self.value}"


@dataclass(slots=True)
class Turn:
    """A raw turn as recorded: who said what, when."""

    id: str
    namespace: str
    source: str
    text: str
    at: Optional[datetime]
    external_id: Optional[str]
    raw: dict = field(repr=False, compare=False)

    @staticmethod
    def of(j: dict) -> "Turn":
        return Turn(
            id=str(j["id"]),
            namespace=j.get("namespace", ""),
            source=j.get("source", ""),
            text=j.get("text", ""),
            at=_time(j.get("at")),
            external_id=j.get("external_id"),
            raw=j,
        )


@dataclass(slots=True)
class Outcome:
    """What a turn did to one memory: ``inserted``, ``superseded``, ``reinforced``,
    ``tombstoned``…; ``tombstoned`` lists the memories it replaced."""

    kind: str
    memory: Optional[str]
    detail: str
    tombstoned: list[str]

    @staticmethod
    def of(j: dict) -> "Outcome":
        return Outcome(
            kind=j.get("kind", ""),
            memory=j.get("memory"),
            detail=j.get("detail", ""),
            tombstoned=list(j.get("tombstoned") or []),
        )


@dataclass(slots=True)
class RememberResult:
    """What remembering one turn (or forgetting) did.

    ``status`` is ``extracted``, ``nothing_extracted`` (the turn is kept, no memory written)
    or ``already_recorded`` (an idempotent retry). ``model`` says who extracted it, e.g.
    ``{"client": "fake", "model": "fake-qwen"}``.
    """

    status: str
    turn: Optional[Turn]
    outcomes: list[Outcome]
    notes: list[str]
    model: dict
    raw: dict = field(repr=False, compare=False)

    @staticmethod
    def of(j: dict) -> "RememberResult":
        # The HTTP door wraps the report with the principal it was written for.
        if "report" in j and isinstance(j["report"], dict):
            j = j["report"]
        turn = j.get("turn")
        return RememberResult(
            status=j.get("status", ""),
            turn=Turn.of(turn) if isinstance(turn, dict) else None,
            outcomes=[Outcome.of(o) for o in j.get("outcomes") or []],
            notes=list(j.get("notes") or []),
            model=dict(j.get("model") or {}),
            raw=j,
        )

    @property
    def memories(self) -> list[str]:
        """The ids of the memories this turn wrote."""
        return [o.memory for o in self.outcomes if o.memory]


@dataclass(slots=True)
class ForgetMatch:
    """One memory a forget command matched, and ``why``: ``"claim entity matches"``, ``"claim
    entity and attribute match"``, ``"its own words match: …"``, or for a kept one why it is
    kept (``"pinned …"``, ``"only mentioned inside a web address: …"``)."""

    id: Optional[str]
    content: str
    pinned: bool
    why: str

    @staticmethod
    def of(j: dict) -> "ForgetMatch":
        return ForgetMatch(
            id=j.get("id"), content=j.get("content", ""), pinned=bool(j.get("pinned")), why=j.get("why", "")
        )


@dataclass(slots=True)
class ForgetPreview:
    """What a forget command would tombstone (``forget``) and what it keeps (``kept``), with
    why: the answer of ``forget(command, dry_run=True)``, which writes nothing. ``str()`` of it
    is the preview as ``mnemo forget --dry-run`` prints it."""

    command: str
    by: str
    include_pinned: bool
    forget: list[ForgetMatch]
    kept: list[ForgetMatch]
    text: str
    raw: dict = field(repr=False, compare=False)

    @staticmethod
    def of(j: dict) -> "ForgetPreview":
        p = j.get("preview") if isinstance(j.get("preview"), dict) else j
        return ForgetPreview(
            command=p.get("command", ""),
            by=p.get("by", ""),
            include_pinned=bool(p.get("include_pinned")),
            forget=[ForgetMatch.of(m) for m in p.get("forget") or []],
            kept=[ForgetMatch.of(m) for m in p.get("kept") or []],
            text=j.get("text", ""),
            raw=j,
        )

    @property
    def ids(self) -> list[str]:
        """The ids of the memories the command would tombstone."""
        return [m.id for m in self.forget if m.id]

    def __str__(self) -> str:
        return self.text


@dataclass(slots=True)
class RecallLine:
    """One packed memory as an agent reads it."""

    id: str
    kind: str
    content: str
    trust: Optional[float]
    basis: str

    @staticmethod
    def of(j: dict) -> "RecallLine":
        return RecallLine(
            id=j["id"], kind=j.get("kind", ""), content=j.get("content", ""), trust=j.get("trust"), basis=j.get("basis", "")
        )


@dataclass(slots=True)
class ActOn:
    """A value the agent may act on, and the memory that holds it."""

    memory: str
    entity: str
    attribute: str
    value: str

    @staticmethod
    def of(j: dict) -> "ActOn":
        return ActOn(memory=j["memory"], entity=j["entity"], attribute=j["attribute"], value=j["value"])


@dataclass(slots=True)
class Plan:
    """The agent turn's plan on ACT, checked against the pack (``faithful``), or refused."""

    answer: str
    steps: list[str]
    uses: list[dict]
    faithful: bool
    refused: list[str]
    model: str

    @staticmethod
    def of(j: Optional[dict]) -> Optional["Plan"]:
        if not j:
            return None
        return Plan(
            answer=j.get("answer", ""),
            steps=list(j.get("steps") or []),
            uses=list(j.get("uses") or []),
            faithful=bool(j.get("faithful")),
            refused=list(j.get("refused") or []),
            model=j.get("model", ""),
        )


@dataclass(slots=True)
class EscalationNote:
    """On ESCALATE: the escalation recorded (``id``, e.g. ``e3``) and how a human answers it."""

    id: Optional[str]
    reused: bool
    note: str

    @staticmethod
    def of(j: Optional[dict]) -> Optional["EscalationNote"]:
        if not j:
            return None
        return EscalationNote(id=j.get("id"), reused=bool(j.get("reused")), note=j.get("note", ""))


@dataclass(slots=True)
class Recall:
    """A recall as an agent reads it: the packed memories within the budget, and the decision.

    ``decision`` is ``"act"`` or ``"escalate"`` (``None`` for a raw recall, which is not
    graded). ``text`` is the prompt-ready rendering every door shows (memory lines within the
    budget, plus a small fixed header and decision line). On ACT, ``act_on`` holds the
    value(s) to act on; on ESCALATE, ``reasons`` says why and ``escalation`` how a human
    answers it.
    """

    memories: list[RecallLine]
    decision: Optional[str]
    trust: Optional[float]
    threshold: Optional[float]
    act_on: list[ActOn]
    reasons: list[str]
    weak: list[str]
    budget: int
    tokens: int
    left_out: list[str]
    notes: list[str]
    plan: Optional[Plan]
    escalation: Optional[EscalationNote]
    text: str
    raw: dict = field(repr=False, compare=False)

    @staticmethod
    def of(j: dict) -> "Recall":
        d = j.get("decision") or {}
        return Recall(
            memories=[RecallLine.of(m) for m in j.get("memories") or []],
            decision=d.get("decision"),
            trust=d.get("trust"),
            threshold=d.get("threshold"),
            act_on=[ActOn.of(a) for a in d.get("act_on") or []],
            reasons=list(d.get("reasons") or []),
            weak=list(d.get("weak") or []),
            budget=int(j.get("budget", 0)),
            tokens=int(j.get("tokens", 0)),
            left_out=list(j.get("left_out") or []),
            notes=list(j.get("notes") or []),
            plan=Plan.of(j.get("plan")),
            escalation=EscalationNote.of(j.get("escalation")),
            text=j.get("text", ""),
            raw=j,
        )

    @property
    def acts(self) -> bool:
        """The decision is ACT."""
        return self.decision == "act"

    def __str__(self) -> str:
        return self.text


@dataclass(slots=True)
class TurnResult:
    """An agent turn: what the text wrote to memory, then the recall made with it (with the
    checked plan on ACT or the escalation on ESCALATE)."""

    remembered: Optional[RememberResult]
    recall: Recall
    text: str
    raw: dict = field(repr=False, compare=False)

    @staticmethod
    def of(j: dict) -> "TurnResult":
        rem = j.get("remembered")
        return TurnResult(
            remembered=RememberResult.of(rem) if isinstance(rem, dict) else None,
            recall=Recall.of(j.get("recall") or {}),
            text=j.get("text", ""),
            raw=j,
        )

    @property
    def decision(self) -> Optional[str]:
        return self.recall.decision

    @property
    def plan(self) -> Optional[Plan]:
        return self.recall.plan

    def __str__(self) -> str:
        return self.text


@dataclass(slots=True)
class MemoryRecord:
    """A stored memory, active or tombstoned (``status``; a tombstoned one carries ``reason``,
    ``tombstoned_at`` and the memory that ``superseded_by`` it, if any)."""

    id: str
    namespace: str
    kind: str
    content: str
    claim: Optional[Claim]
    entities: list[str]
    importance: float
    sources: list[str]
    pinned: bool
    status: str
    reason: Optional[str]
    superseded_by: Optional[str]
    created_at: Optional[datetime]
    last_confirmed_at: Optional[datetime]
    last_accessed_at: Optional[datetime]
    tombstoned_at: Optional[datetime]
    raw: dict = field(repr=False, compare=False)

    @staticmethod
    def of(j: dict) -> "MemoryRecord":
        status = j.get("status", "active")
        reason = j.get("reason")
        at = j.get("at")
        superseded_by = j.get("superseded_by")
        if isinstance(status, dict):  # `why` nests the status
            reason, at, superseded_by = status.get("reason"), status.get("at"), status.get("superseded_by")
            status = status.get("status", "active")
        return MemoryRecord(
            id=str(j["id"]),
            namespace=j.get("namespace", ""),
            kind=j.get("kind", ""),
            content=j.get("content", ""),
            claim=Claim.of(j.get("claim")),
            entities=list(j.get("entities") or []),
            importance=float(j.get("importance", 0.0)),
            sources=list(j.get("sources") or []),
            pinned=bool(j.get("pinned")),
            status=status,
            reason=reason,
            superseded_by=superseded_by if isinstance(superseded_by, str) else None,
            created_at=_time(j.get("created_at")),
            last_confirmed_at=_time(j.get("last_confirmed_at")),
            last_accessed_at=_time(j.get("last_accessed_at")),
            tombstoned_at=_time(at) if status != "active" else None,
            raw=j,
        )

    @property
    def active(self) -> bool:
        return self.status == "active"


@dataclass(slots=True)
class Why:
    """A memory's history: the memory, its events (created, reinforced, tombstoned…), the
    memory that superseded it. ``str(why)`` is the explanation every door prints."""

    memory: MemoryRecord
    events: list[dict]
    superseded_by: Optional[MemoryRecord]
    text: str
    raw: dict = field(repr=False, compare=False)

    @staticmethod
    def of(j: dict) -> "Why":
        text = j.get("text", "")
        if "why" in j and isinstance(j["why"], dict):  # the HTTP door's envelope
            j = j["why"]
        sup = j.get("superseded_by")
        return Why(
            memory=MemoryRecord.of(j["memory"]),
            events=list(j.get("events") or []),
            superseded_by=MemoryRecord.of(sup) if isinstance(sup, dict) else None,
            text=text or j.get("text", ""),
            raw=j,
        )

    def __str__(self) -> str:
        return self.text


@dataclass(slots=True)
class ClaimValue:
    """One value a claim has had, with both clocks: when it was true in the world
    (``valid_from`` / ``valid_to``, None when not stated) and when memory recorded it and, if it
    ended, when and why."""

    id: str
    value: str
    recorded_at: str
    ended_at: Optional[str]
    ended_because: Optional[str]
    superseded_by: Optional[str]
    sources: list[str]
    valid_from: Optional[str] = None
    valid_to: Optional[str] = None

    @staticmethod
    def of(j: dict) -> "ClaimValue":
        return ClaimValue(
            id=j["id"],
            value=j["value"],
            recorded_at=j["recorded_at"],
            ended_at=j.get("ended_at"),
            ended_because=j.get("ended_because"),
            superseded_by=j.get("superseded_by"),
            sources=list(j.get("sources") or []),
            valid_from=j.get("valid_from"),
            valid_to=j.get("valid_to"),
        )


@dataclass(slots=True)
class History:
    """Every value memory has held for one claim, oldest first. ``str(history)`` is the text
    every door prints."""

    claim: str
    values: list[ClaimValue]
    notes: list[str]
    text: str
    raw: dict = field(repr=False, compare=False)

    @staticmethod
    def of(j: dict) -> "History":
        h = j["history"]
        return History(
            claim=h["claim"],
            values=[ClaimValue.of(v) for v in h.get("values") or []],
            notes=list(h.get("notes") or []),
            text=j.get("text", ""),
            raw=j,
        )

    def __str__(self) -> str:
        return self.text


@dataclass(slots=True)
class Page:
    """One page of memories by id; pass ``next_after`` as ``after`` for the next page."""

    memories: list[MemoryRecord]
    next_after: Optional[str]

    @staticmethod
    def of(j: dict) -> "Page":
        return Page(memories=[MemoryRecord.of(m) for m in j.get("memories") or []], next_after=j.get("next_after"))


@dataclass(slots=True)
class Escalation:
    """A recorded escalation: the task memory could not support, why, and its status
    (``open``, ``answered``, ``dismissed``)."""

    id: str
    status: str
    reasons: list[str]
    trust: Optional[float]
    threshold: Optional[float]
    raw: dict = field(repr=False, compare=False)

    @staticmethod
    def of(j: dict) -> "Escalation":
        status = j.get("status", "")
        if isinstance(status, dict):
            status = status.get("status", "")
        return Escalation(
            id=str(j.get("id", "")),
            status=str(status),
            reasons=list(j.get("reasons") or []),
            trust=j.get("trust"),
            threshold=j.get("threshold"),
            raw=j,
        )

    @property
    def task(self) -> Any:
        return self.raw.get("task")

    @property
    def claim(self) -> Any:
        return self.raw.get("claim")


__all__ = [
    "ActOn",
    "Claim",
    "Escalation",
    "EscalationNote",
    "MemoryRecord",
    "Outcome",
    "Page",
    "Plan",
    "Recall",
    "RecallLine",
    "RememberResult",
    "Turn",
    "TurnResult",
    "Why",
]
