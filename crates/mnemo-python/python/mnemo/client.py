"""Mnemo over HTTP: the same API as :class:`mnemo.Memory`, against ``mnemo serve``.

Only the standard library is used (``urllib``). The server answers with the same JSON as the
embedded engine, and its stable error codes become the same exceptions.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Optional

from ._api import Api, AsyncApi
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

_BY_CODE = {
    "bad_request": InvalidInputError,
    "invalid_input": InvalidInputError,
    "too_many_items": InvalidInputError,
    "payload_too_large": InvalidInputError,
    "not_found": NotFoundError,
    "conflict": ConflictError,
    "unauthorized": UnauthorizedError,
    "forbidden": UnauthorizedError,
    "unextracted": UnextractedError,
    "unsupported": UnsupportedError,
    "shutting_down": BusyError,
    "busy": BusyError,
    "overloaded": BusyError,
    "read_only": ReadOnlyError,
    "rate_limited": RateLimitedError,
    "model_failure": ModelError,
    "config": ConfigError,
}
_BY_STATUS = {400: InvalidInputError, 401: UnauthorizedError, 403: UnauthorizedError, 404: NotFoundError,
              409: ConflictError, 422: InvalidInputError, 429: RateLimitedError, 501: UnsupportedError,
              502: ModelError, 503: BusyError}


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Mnemo's API never redirects: a redirect is answered as the error it is, so the bearer
    token is never sent on to another address."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


class Client(Api):
    """Mnemo's HTTP API with the methods of :class:`mnemo.Memory`.

    ``Client("http://127.0.0.1:8080", token="…", namespace="me")``: the token is a bearer token
    from the server's ``[[serve.tokens]]``; the namespace must be one the token reaches. Who
    said a remembered turn is the token's principal (a ``source`` label is the server's to
    accept).
    """

    def __init__(self, url: str, token: Optional[str] = None, *, namespace: str = "default", timeout: float = 60.0) -> None:
        if not url.startswith(("http://", "https://")):
            raise InvalidInputError(f"url {url!r} must start with http:// or https://")
        self.url = url.rstrip("/")
        self.token = token
        self.namespace = namespace
        self.timeout = timeout

    # -- transport -----------------------------------------------------------------------
    def _request(self, method: str, path: str, body: Any = None, query: Optional[dict] = None, raw: bool = False) -> Any:
        url = self.url + path
        if query:
            q = {k: ("true" if v is True else "false" if v is False else v) for k, v in query.items() if v is not None}
            if q:
                url += "?" + urllib.parse.urlencode(q)
        data = None
        headers = {"accept": "application/json"}
        if self.token:
            headers["authorization"] = f"Bearer {self.token}"
        if body is not None:
            data = json.dumps(body).encode()
            headers["content-type"] = "application/json"
        req = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            with _OPENER.open(req, timeout=self.timeout) as resp:
                text = resp.read().decode()
        except urllib.error.HTTPError as e:
            raise _error(e, url) from None
        except (urllib.error.URLError, OSError) as e:
            raise ConnectionFailedError(f"{method} {url}: {getattr(e, 'reason', e)}") from e
        if raw:
            return text
        try:
            return json.loads(text)
        except ValueError:
            raise ConnectionFailedError(f"{method} {url} answered with something that is not JSON: {text[:200]!r}") from None

    def _path(self, ns: str, rest: str) -> str:
        return f"/v1/namespaces/{urllib.parse.quote(ns, safe='')}/{rest}"

    # -- the door ------------------------------------------------------------------------
    def _remember(self, ns, text, source, key, at):  # type: ignore[no-untyped-def]
        body = {"text": text}
        if source is not None:
            body["source"] = source
        if key is not None:
            body["idempotency_key"] = key
        if at is not None:
            body["at"] = at
        return self._request("POST", self._path(ns, "remember"), body)

    def _remember_messages(self, ns, messages, source, key, at):  # type: ignore[no-untyped-def]
        # One turn per message, in order, each at its own time (one POST each): the rule the
        # engine applies in-process. A non-user message is said by its role.
        out = []
        for i, m in enumerate(messages):
            label = source if m["role"].lower() == "user" else m["role"]
            k = None if key is None else f"{key}#{i}"
            out.append(self._remember(ns, m["content"], label, k, m.get("timestamp", at)))
        return out

    def _recall(self, ns, query, budget, mode, about, raw, as_of, since, until, valid_at):  # type: ignore[no-untyped-def]
        body: dict = {"query": query, "raw": raw}
        for name, t in (("as_of", as_of), ("since", since), ("until", until), ("valid_at", valid_at)):
            if t is not None:
                body[name] = t
        if budget is not None:
            body["budget"] = budget
        if mode is not None:
            body["mode"] = mode
        if about is not None:
            body["about"] = about
        return self._request("POST", self._path(ns, "recall"), body)

    def _turn(self, ns, text, budget, about):  # type: ignore[no-untyped-def]
        body: dict = {"text": text}
        if budget is not None:
            body["budget"] = budget
        if about is not None:
            body["about"] = about
        return self._request("POST", self._path(ns, "turn"), body)

    def _forget(self, ns, command, dry_run, include_pinned):  # type: ignore[no-untyped-def]
        body: dict = {"command": command}
        if dry_run:
            body["dry_run"] = True
        if include_pinned:
            body["include_pinned"] = True
        return self._request("POST", self._path(ns, "forget"), body)

    def _history(self, ns, claim):  # type: ignore[no-untyped-def]
        return self._request("GET", self._path(ns, "history"), query={"claim": claim})

    def _why(self, ns, id):  # type: ignore[no-untyped-def]
        return self._request("GET", self._path(ns, "memories/" + urllib.parse.quote(id, safe="")))

    def _page(self, ns, after, limit, include_tombstoned):  # type: ignore[no-untyped-def]
        q = {"after": after, "limit": limit, "include_tombstoned": include_tombstoned}
        return self._request("GET", self._path(ns, "memories"), query=q)

    def _export(self, ns, include_tombstoned):  # type: ignore[no-untyped-def]
        text = self._request("GET", self._path(ns, "export"), query={"include_tombstoned": include_tombstoned}, raw=True)
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def _escalations(self, ns, open_only):  # type: ignore[no-untyped-def]
        return self._request("GET", self._path(ns, "escalations"), query={"open": open_only})

    def _answer(self, ns, id, value):  # type: ignore[no-untyped-def]
        return self._request("POST", self._path(ns, f"escalations/{urllib.parse.quote(id, safe='')}/answer"), {"text": value})

    def _dismiss(self, ns, id):  # type: ignore[no-untyped-def]
        return self._request("POST", self._path(ns, f"escalations/{urllib.parse.quote(id, safe='')}/dismiss"), {})

    def _erase(self, ns, what, reason, subject, dry_run):  # type: ignore[no-untyped-def]
        body = {"what": what, "reason": reason, "subject": subject, "dry_run": dry_run}
        return self._request("POST", self._path(ns, "erase"), body)

    # -- the server ----------------------------------------------------------------------
    def health(self) -> dict:
        """The server's ``/health``."""
        return self._request("GET", "/health")

    def close(self) -> None:
        """Nothing to release: each call is its own request."""

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Client({self.url!r}, namespace={self.namespace!r})"


def _error(e: "urllib.error.HTTPError", url: str) -> MnemoError:
    """The exception for an HTTP error answer, from its stable code (else its status)."""
    try:
        body = json.loads(e.read().decode() or "{}")
        detail = body.get("error", {})
        code, message = detail.get("code", ""), detail.get("message", "")
    except (ValueError, AttributeError):
        code, message = "", ""
    cls = _BY_CODE.get(code) or _BY_STATUS.get(e.code, MnemoError)
    err = cls(message or f"HTTP {e.code} from {url}")
    err.status = e.code  # type: ignore[attr-defined]
    err.code = code  # type: ignore[attr-defined]
    retry = e.headers.get("retry-after") if e.headers else None
    # Seconds to wait before trying again (busy, read-only, rate-limited), when the server says.
    err.retry_after = float(retry) if retry and retry.strip().isdigit() else None  # type: ignore[attr-defined]
    return err


class AsyncClient(AsyncApi):
    """:class:`Client` for ``asyncio`` (each request on a worker thread)."""

    def __init__(self, url: str, token: Optional[str] = None, **kw: Any) -> None:
        super().__init__(Client(url, token, **kw))

    async def health(self) -> dict:
        import asyncio

        return await asyncio.to_thread(self._sync.health)  # type: ignore[attr-defined]
