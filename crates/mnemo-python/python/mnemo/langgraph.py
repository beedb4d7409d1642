"""Mnemo as a LangGraph store (``langgraph.store.base.BaseStore``).

::

    from langgraph.graph import StateGraph
    from mnemo import Memory
    from mnemo.langgraph import MnemoStore

    store = MnemoStore(Memory("data"))
    graph = builder.compile(store=store)   # nodes get `store` and call put/get/search

How items map onto memory:

- A LangGraph namespace ``("users", "42")`` is the Mnemo namespace ``users.42`` (labels of
  letters, digits, ``_``, ``:`` and ``-``; LangGraph itself forbids ``.`` in a label).
- ``put(ns, key, value)`` remembers the fact ``key | item | <value as JSON>``: a second
  ``put`` of the same key supersedes the first, which is tombstoned with the reason and the
  time, never deleted — ``Memory.why`` shows an item's whole history. ``delete`` (``put`` of
  ``None``) forgets ``key | item`` precisely.
- ``get`` reads the active memory of the key; ``search`` with a ``query`` is Mnemo's recall
  (hybrid retrieval, rank order; ``score`` is 1 for the first hit down to 1/n for the last,
  not a similarity), without a ``query`` every item, newest first; ``filter`` matches values
  by equality or ``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``.
- Keys compare exactly, but memory compares fact names without case or repeated spaces: a
  ``put`` of ``"Pref"`` while ``"pref"`` is stored is refused (ValueError) rather than
  replacing it. A key holds no ``|`` and no line break.
- ``list_namespaces`` and a ``search`` below a prefix need the store's list of namespaces:
  :class:`mnemo.Memory` has it; over HTTP (:class:`mnemo.Client`) a token reaches one
  namespace, so ``search`` takes the exact namespace and ``list_namespaces`` raises
  :class:`mnemo.UnsupportedError`.
- TTLs are not supported (memory decays by salience instead); ``index`` is ignored (every
  memory is indexed).

``get`` and ``search`` read the namespace's memories page by page: fine for the thousands of
items an agent keeps per namespace, linear beyond.
"""

from __future__ import annotations

import asyncio
import json
import re
from datetime import datetime, timezone
from typing import Any, Iterable, Optional

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from ._api import Api
from .errors import UnsupportedError
from .types import MemoryRecord

ATTRIBUTE = "item"
_LABEL = re.compile(r"^[A-Za-z0-9_:\-]+$")


def namespace_of(path: tuple[str, ...]) -> str:
    """The Mnemo namespace of a LangGraph namespace path."""
    if not path:
        raise InvalidNamespaceError("Namespace cannot be empty.")
    for label in path:
        if not isinstance(label, str) or not _LABEL.match(label):
            raise InvalidNamespaceError(
                f"namespace label {label!r} in {path}: a Mnemo namespace label is letters, digits, '_', ':' or '-'"
            )
    ns = ".".join(path)
    if len(ns) > 128:
        raise InvalidNamespaceError(f"namespace {path} is {len(ns)} characters joined; Mnemo takes at most 128")
    return ns


def path_of(ns: str) -> tuple[str, ...]:
    return tuple(ns.split("."))


def encode(value: dict[str, Any]) -> str:
    """A value as one run of JSON with no white space and no ``|`` (escaped as ``\\u0020`` and
    ``\\u007c`` inside strings), so memory's folding of white space cannot change it."""
    if not isinstance(value, dict):
        raise ValueError(f"a LangGraph item value is a dict, got {type(value).__name__}")
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=True, sort_keys=True)
    return text.replace(" ", "\\u0020").replace("|", "\\u007c")


def check_key(key: str) -> None:
    if not isinstance(key, str) or not key.strip():
        raise ValueError("an item key is non-empty text")
    if "|" in key or "\n" in key or "\r" in key:
        raise ValueError(f"item key {key!r} holds '|' or a line break, which a memory's fact name cannot")
    if key != " ".join(key.split()):
        raise ValueError(f"item key {key!r} has leading, trailing or repeated white space, which memory folds")


def _fold(name: str) -> str:
    return " ".join(name.split()).lower()


class _Stored:
    """One item as memory holds it."""

    def __init__(self, rec: MemoryRecord, created: datetime) -> None:
        assert rec.claim is not None
        self.key = rec.claim.entity
        self.value = json.loads(rec.claim.value)
        self.created_at = created
        self.updated_at = rec.created_at or created
        self.memory = rec.id


def _items(records: list[MemoryRecord]) -> dict[str, _Stored]:
    """The active items of a namespace's memories (tombstoned ones included, to find when an
    item was first put: the start of its chain of supersessions)."""
    by_id = {r.id: r for r in records}
    supersedes: dict[str, MemoryRecord] = {}
    for r in records:
        if r.superseded_by and r.superseded_by in by_id:
            supersedes[r.superseded_by] = r
    out: dict[str, _Stored] = {}
    for r in records:
        c = r.claim
        if not r.active or c is None or _fold(c.attribute) != ATTRIBUTE:
            continue
        first = r
        while first.id in supersedes and supersedes[first.id].claim and supersedes[first.id].claim.entity == c.entity:
            first = supersedes[first.id]
        try:
            out[c.entity] = _Stored(r, first.created_at or datetime.now(timezone.utc))
        except ValueError:
            continue  # a fact named "item" that is not one of this store's items
    return out


def _matches(value: dict, flt: Optional[dict]) -> bool:
    if not flt:
        return True
    for k, want in flt.items():
        have = value.get(k)
        if isinstance(want, dict) and want and all(str(op).startswith("$") for op in want):
            for op, arg in want.items():
                ok = {
                    "$eq": lambda: have == arg,
                    "$ne": lambda: have != arg,
                    "$gt": lambda: have is not None and have > arg,
                    "$gte": lambda: have is not None and have >= arg,
                    "$lt": lambda: have is not None and have < arg,
                    "$lte": lambda: have is not None and have <= arg,
                }.get(op)
                if ok is None:
                    raise ValueError(f"filter operator {op!r} is not one of $eq, $ne, $gt, $gte, $lt, $lte")
                if not ok():
                    return False
        elif have != want:
            return False
    return True


class MnemoStore(BaseStore):
    """A LangGraph ``BaseStore`` over Mnemo (a :class:`mnemo.Memory` or :class:`mnemo.Client`).
    See the module documentation for how items map onto memories."""

    supports_ttl = False

    def __init__(self, memory: Api) -> None:
        self.memory = memory

    # -- LangGraph's one entry point --------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return [self._one(op) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        return await asyncio.to_thread(self.batch, ops)

    def _one(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            return self._get(op)
        if isinstance(op, PutOp):
            return self._put(op)
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(op)
        raise ValueError(f"unknown store operation {type(op).__name__}")

    # -- operations -----------------------------------------------------------------------
    def _records(self, ns: str) -> list[MemoryRecord]:
        return self.memory.list(all=True, namespace=ns)

    def _get(self, op: GetOp) -> Optional[Item]:
        ns = namespace_of(op.namespace)
        s = _items(self._records(ns)).get(op.key)
        if s is None:
            return None
        return Item(value=s.value, key=s.key, namespace=op.namespace, created_at=s.created_at, updated_at=s.updated_at)

    def _put(self, op: PutOp) -> None:
        ns = namespace_of(op.namespace)
        check_key(op.key)
        if op.value is None:
            self.memory.forget(f"{op.key} | {ATTRIBUTE}", namespace=ns)
            return None
        text = encode(op.value)
        others = [k for k in _items(self._records(ns)) if k != op.key and _fold(k) == _fold(op.key)]
        if others:
            raise ValueError(
                f"item key {op.key!r} differs from the stored key {others[0]!r} only in case or spaces, and memory "
                "names facts without either: delete the stored one first or use the same key"
            )
        self.memory.remember(f"[SEM] {op.key} | {ATTRIBUTE} | {text}", namespace=ns)
        return None

    def _namespaces_below(self, prefix: tuple[str, ...]) -> list[str]:
        lister = getattr(self.memory, "namespaces", None)
        if lister is None:
            return [namespace_of(prefix)]
        want = namespace_of(prefix)
        return sorted(n for n in lister() if n == want or n.startswith(want + "."))

    def _search(self, op: SearchOp) -> list[SearchItem]:
        found: list[tuple[str, _Stored, Optional[float]]] = []
        for ns in self._namespaces_below(op.namespace_prefix):
            items = _items(self._records(ns))
            if op.query:
                recall = self.memory.recall(op.query, raw=True, namespace=ns)
                by_memory = {s.memory: s for s in items.values()}
                hits = [by_memory[line.id] for line in recall.memories if line.id in by_memory]
                n = len(hits)
                found.extend((ns, s, 1.0 - i / n if n else None) for i, s in enumerate(hits))
            else:
                found.extend((ns, s, None) for s in sorted(items.values(), key=lambda s: s.updated_at, reverse=True))
        found = [f for f in found if _matches(f[1].value, op.filter)]
        if op.query:
            found.sort(key=lambda f: -(f[2] or 0.0))
        page = found[op.offset : op.offset + op.limit]
        return [
            SearchItem(
                namespace=path_of(ns),
                key=s.key,
                value=s.value,
                created_at=s.created_at,
                updated_at=s.updated_at,
                score=score,
            )
            for ns, s, score in page
        ]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        lister = getattr(self.memory, "namespaces", None)
        if lister is None:
            raise UnsupportedError(
                "list_namespaces needs the store's namespaces; over HTTP a token reaches one namespace: use Memory"
            )
        paths = [path_of(n) for n in lister()]
        for cond in op.match_conditions or ():
            pat = tuple(cond.path)
            if cond.match_type == "prefix":
                paths = [p for p in paths if len(p) >= len(pat) and all(a in ("*", b) for a, b in zip(pat, p))]
            else:
                paths = [
                    p for p in paths if len(p) >= len(pat) and all(a in ("*", b) for a, b in zip(pat, p[len(p) - len(pat):]))
                ]
        if op.max_depth is not None:
            paths = sorted({p[: op.max_depth] for p in paths})
        else:
            paths = sorted(set(paths))
        return paths[op.offset : op.offset + op.limit]
