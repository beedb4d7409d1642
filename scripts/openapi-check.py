"""Calls every route of a running `mnemo serve` through the Python client that
openapi-python-client generated from its /openapi.json (scripts/openapi-check runs it).

Each call must answer 200 and parse into the generated typed model, with no field the document
does not declare (a model's additional_properties stays empty); each raw body must also validate
against the document's own JSON Schema for that response. A failure names the route and what
was wrong.

The agent turn is called compact (the default) and full, on ACT (with its checked plan) and on
ESCALATE (with its escalation); the escalation is listed, read and answered over HTTP, and the
same turn then acts on the human's value; another is dismissed; a closed one answers 409.

A backup (`POST /v1/backup`, every namespace) is downloaded with ADMIN_TOKEN, a token that
reaches every namespace, and opened as the SQLite database it is; TOKEN, scoped to NAMESPACE,
is refused it (403).

Usage: openapi-check.py BASE_URL TOKEN NAMESPACE OPENAPI_JSON ADMIN_TOKEN (the generated
package `mnemo_client` on PYTHONPATH).
"""
import json
import os
import sqlite3
import sys
import tempfile
import traceback

import attrs

from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from mnemo_client import AuthenticatedClient, Client
from mnemo_client.api.agent import turn
from mnemo_client.api.escalations import answer, dismiss, escalation, escalations
from mnemo_client.api.memories import export, history, list_, restore
from mnemo_client.api.memory import erase, forget, recall, remember, why
from mnemo_client.api.service import health, ready, scrape
from mnemo_client.api.store import backup
from mnemo_client.models import (
    About,
    AgentRecall,
    AgentTurn,
    AnsweredEscalation,
    AnswerRequest,
    Assessment,
    CheckedPlan,
    DismissRequest,
    EraseRequest,
    EraseResponse,
    ErrorBody,
    Escalation,
    EscalationList,
    EscalationView,
    ForgetPreview,
    ForgetRequest,
    ForgetResponse,
    Health,
    HistoryResponse,
    ListResponse,
    MemoryRecord,
    Pack,
    PlanView,
    RecallRequest,
    RecallResponse,
    RememberReport,
    RememberRequest,
    RememberResponse,
    RestoreResponse,
    TurnEscalation,
    TurnRequest,
    TurnResponse,
    TurnView,
    Verdict,
    WhyReport,
    WhyResponse,
)
from mnemo_client.types import UNSET, File


class CheckFailed(Exception):
    pass


def say(msg):
    print(f"openapi-check: {msg}", file=sys.stderr)


def extra_fields(value, at="$"):
    """Every field a served body had that the generated models do not declare."""
    found = []
    if attrs.has(type(value)):
        found += [f"{at}.{k}" for k in getattr(value, "additional_properties", {})]
        for field in attrs.fields(type(value)):
            if field.name != "additional_properties":
                found += extra_fields(getattr(value, field.name), f"{at}.{field.name}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += extra_fields(item, f"{at}[{i}]")
    return found


class Checker:
    def __init__(self, doc):
        self.doc = doc
        self.registry = Registry().with_resource(
            "urn:mnemo-openapi", Resource.from_contents(doc, default_specification=DRAFT202012)
        )
        self.calls = 0
        self.covered = set()

    def schema_errors(self, body, ref):
        validator = Draft202012Validator({"$ref": f"urn:mnemo-openapi{ref}"}, registry=self.registry)
        return [f"{'/'.join(map(str, e.absolute_path)) or '$'}: {e.message}" for e in validator.iter_errors(body)]

    def response_ref(self, method, path, status="200"):
        content = self.doc["paths"][path][method]["responses"][status]["content"]
        media, body = next(iter(content.items()))
        return media, body["schema"]

    def check(self, what, method, path, response, model):
        """`response` answered 200, parsed into `model`, with no undeclared field, and its raw
        body validates against the document's 200 schema of `method path`."""
        self.calls += 1
        self.covered.add((method, path))
        if response.status_code != 200:
            raise CheckFailed(f"{what}: HTTP {response.status_code}: {response.content.decode(errors='replace')}")
        if not isinstance(response.parsed, model):
            raise CheckFailed(f"{what}: parsed as {type(response.parsed).__name__}, not {model.__name__}")
        extra = extra_fields(response.parsed)
        if extra:
            raise CheckFailed(f"{what}: served fields the document does not declare: {extra}")
        media, schema = self.response_ref(method, path)
        if media == "application/json":
            raw = json.loads(response.content)
            errors = self.schema_errors(raw, "#/paths/" + path.replace("~", "~0").replace("/", "~1")
                                        + f"/{method}/responses/200/content/application~1json/schema")
            if errors:
                raise CheckFailed(f"{what}: the body does not validate against the document: {errors[:5]}")
        say(f"  {what}: 200, {model.__name__}")
        return response.parsed

    def check_error(self, what, method, path, response, status):
        """An error answered with `status`, declared for the operation, parsed as ErrorBody."""
        self.calls += 1
        if response.status_code != status:
            raise CheckFailed(f"{what}: expected HTTP {status}, got {response.status_code}")
        if str(status) not in self.doc["paths"][path][method]["responses"]:
            raise CheckFailed(f"{what}: HTTP {status} is not declared for {method.upper()} {path}")
        if not isinstance(response.parsed, ErrorBody):
            raise CheckFailed(f"{what}: the error did not parse as ErrorBody: {response.content!r}")
        say(f"  {what}: {status}, ErrorBody code {response.parsed.error.code}")


def run(base, token, ns, doc, admin_token):
    c = Checker(doc)
    client = AuthenticatedClient(base_url=base, token=token)
    admin = AuthenticatedClient(base_url=base, token=admin_token)
    anonymous = Client(base_url=base)
    v1 = "/v1/namespaces/{ns}"

    r = c.check("GET /health", "get", "/health", health.sync_detailed(client=anonymous), Health)
    assert r.status == "ok", r
    r = c.check("GET /ready", "get", "/ready", ready.sync_detailed(client=anonymous), Health)
    assert r.status == "ready" and isinstance(r.store_rev, int), r

    text = "[SEM] Acme | owner | Ben\n[SEM] Acme | site | Lyon\n[EPI] We met Ben at the fair"
    body = RememberRequest(text=text, source="crm", idempotency_key="openapi-check-1")
    r = c.check("POST remember", "post", f"{v1}/remember",
                remember.sync_detailed(ns, client=client, body=body), RememberResponse)
    assert isinstance(r.report, RememberReport) and len(r.report.outcomes) == 3, r
    ben = r.report.outcomes[0].memory
    r = c.check("POST remember (same idempotency key)", "post", f"{v1}/remember",
                remember.sync_detailed(ns, client=client, body=body), RememberResponse)
    assert r.report.outcomes == [], r
    r = c.check("POST remember (a superseding value)", "post", f"{v1}/remember",
                remember.sync_detailed(ns, client=client, body=RememberRequest(text="[SEM] Acme | owner | Carl")),
                RememberResponse)
    assert r.report.outcomes[0].kind.value == "superseded", r

    about = About(entity="Acme", attribute="owner")
    r = c.check("POST recall (compact)", "post", f"{v1}/recall",
                recall.sync_detailed(ns, client=client, body=RecallRequest(query="who owns Acme", about=about)),
                AgentRecall)
    assert r.memories and r.decision is not None, r
    assert all(m.id.startswith("m") for m in r.memories), r
    r = c.check("POST recall (compact, about as text, mode alias)", "post", f"{v1}/recall",
                recall.sync_detailed(ns, client=client, body=RecallRequest(
                    query="who owns Acme", about="Acme | owner", mode="bm25")),
                AgentRecall)
    assert r.decision is not None, r
    r = c.check("POST recall (compact, raw)", "post", f"{v1}/recall",
                recall.sync_detailed(ns, client=client, body=RecallRequest(query="who owns Acme", raw=True)),
                AgentRecall)
    assert r.decision is None, r
    r = c.check("POST recall (full)", "post", f"{v1}/recall",
                recall.sync_detailed(ns, client=client, body=RecallRequest(
                    query="who owns Acme", about=about, detail="full", budget=512, mode="hybrid")),
                RecallResponse)
    assert isinstance(r.pack, Pack) and isinstance(r.assessment, Assessment) and isinstance(r.verdict, Verdict), r
    r = c.check("POST recall (full, raw)", "post", f"{v1}/recall",
                recall.sync_detailed(ns, client=client, body=RecallRequest(query="Acme", raw=True, detail="full")),
                RecallResponse)
    assert r.assessment is None and r.verdict is None and r.action is None, r

    r = c.check("POST turn (compact)", "post", f"{v1}/turn",
                turn.sync_detailed(ns, client=client, body=TurnRequest(text="[SEM] Acme | owner | Carl", about=about)),
                TurnView)
    assert isinstance(r.remembered, RememberReport) and r.remembered.turn.source == "openapi-check", r
    assert r.recall.decision.decision == "act" and r.recall.decision.act_on[0].value == "Carl", r
    assert isinstance(r.recall.plan, PlanView) and r.recall.plan.faithful, r
    r = c.check("POST turn (full)", "post", f"{v1}/turn",
                turn.sync_detailed(ns, client=client, body=TurnRequest(
                    text="who owns Acme?", about="Acme | owner", detail="full", budget=512)),
                TurnResponse)
    assert isinstance(r.turn, AgentTurn) and r.turn.verdict.decision.value == "act", r
    assert isinstance(r.turn.plan, CheckedPlan) and r.turn.plan.faithful, r

    # An agent turn that escalates: memory holds no approver. The escalation is answered over
    # HTTP (by the token's principal), and the same turn then acts on the human's value.
    ask = TurnRequest(text="Who signs off purchase orders at Northwind Labs?", about="Northwind Labs | approver")
    r = c.check("POST turn (compact, escalates)", "post", f"{v1}/turn",
                turn.sync_detailed(ns, client=client, body=ask), TurnView)
    assert r.recall.decision.decision == "escalate" and isinstance(r.recall.escalation, EscalationView), r
    esc = r.recall.escalation.id
    assert esc == "e1", r
    r = c.check("POST turn (full, escalates)", "post", f"{v1}/turn",
                turn.sync_detailed(ns, client=client, body=TurnRequest(
                    text=ask.text, about=ask.about, detail="full")), TurnResponse)
    assert isinstance(r.turn.escalation, TurnEscalation) and r.turn.escalation.id == esc, r
    assert r.turn.escalation.reused, r
    r = c.check("GET escalations (open)", "get", f"{v1}/escalations",
                escalations.sync_detailed(ns, client=client, open_=True), EscalationList)
    assert [e.id for e in r.escalations] == [esc] and r.escalations[0].status.value == "open", r
    assert r.escalations[0].raised == 2 and r.escalations[0].claim.attribute == "approver", r
    r = c.check("GET escalation", "get", f"{v1}/escalations/{{id}}",
                escalation.sync_detailed(ns, esc, client=client), Escalation)
    assert r.id == esc and r.task.query == ask.text, r
    r = c.check("POST answer (the value alone)", "post", f"{v1}/escalations/{{id}}/answer",
                answer.sync_detailed(ns, esc, client=client, body=AnswerRequest(text="Carla")), AnsweredEscalation)
    assert r.escalation.status.value == "answered" and r.escalation.answer.by == "human:openapi-check", r
    assert r.escalation.answer.value == "Carla" and r.remembered.turn.source == "human:openapi-check", r
    r = c.check("POST turn (compact, acts on the answer)", "post", f"{v1}/turn",
                turn.sync_detailed(ns, client=client, body=ask), TurnView)
    assert r.recall.decision.decision == "act" and r.recall.decision.act_on[0].value == "Carla", r
    assert isinstance(r.recall.plan, PlanView) and r.recall.plan.faithful, r
    r = c.check("POST turn (compact, escalates on another task)", "post", f"{v1}/turn",
                turn.sync_detailed(ns, client=client, body=TurnRequest(
                    text="Who buys for Contoso?", about="Contoso | buyer")), TurnView)
    other = r.recall.escalation.id
    r = c.check("POST dismiss (no name: the token's principal)", "post", f"{v1}/escalations/{{id}}/dismiss",
                dismiss.sync_detailed(ns, other, client=client, body=None), Escalation)
    assert r.status.value == "dismissed" and r.dismissal.by == "human:openapi-check", r
    r = c.check("GET escalations (all)", "get", f"{v1}/escalations",
                escalations.sync_detailed(ns, client=client), EscalationList)
    assert [e.status.value for e in r.escalations] == ["answered", "dismissed"], r

    r = c.check("POST forget (dry run)", "post", f"{v1}/forget",
                forget.sync_detailed(ns, client=client,
                                     body=ForgetRequest(command="We met Ben at the fair", dry_run=True)),
                ForgetResponse)
    assert isinstance(r.preview, ForgetPreview) and len(r.preview.forget) == 1, r
    assert r.preview.forget[0].why.startswith("its own words match"), r
    assert "nothing written" in r.text and not isinstance(r.report, RememberReport), r
    r = c.check("POST forget", "post", f"{v1}/forget",
                forget.sync_detailed(ns, client=client, body=ForgetRequest(command="We met Ben at the fair")),
                ForgetResponse)
    assert r.report.outcomes and r.report.outcomes[0].kind.value == "forgotten", r

    r = c.check("GET history (a claim's two values)", "get", f"{v1}/history",
                history.sync_detailed(ns, client=client, claim="Acme | owner"), HistoryResponse)
    assert [v.value for v in r.history.values] == ["Ben", "Carl"], r
    body = EraseRequest(what="Acme | site", reason="openapi-check", dry_run=True)
    c.check_error("POST erase without the erase scope", "post", f"{v1}/erase",
                  erase.sync_detailed(ns, client=client, body=body), 403)
    r = c.check("POST erase (dry run, a token with the erase scope)", "post", f"{v1}/erase",
                erase.sync_detailed(ns, client=admin, body=body), EraseResponse)
    assert "Lyon" in r.text, r

    r = c.check("GET why (a superseded memory)", "get", f"{v1}/memories/{{id}}",
                why.sync_detailed(ns, ben, client=client), WhyResponse)
    assert isinstance(r.why, WhyReport) and r.why.superseded_by is not None, r

    page = c.check("GET list (limit 1, tombstoned too)", "get", f"{v1}/memories",
                   list_.sync_detailed(ns, client=client, limit=1, include_tombstoned=True), ListResponse)
    assert len(page.memories) == 1 and isinstance(page.next_after, str), page
    seen = [m.id for m in page.memories]
    while isinstance(page.next_after, str):
        page = c.check(f"GET list (after {page.next_after})", "get", f"{v1}/memories",
                       list_.sync_detailed(ns, client=client, after=page.next_after, limit=2,
                                           include_tombstoned=True), ListResponse)
        seen += [m.id for m in page.memories]
    active = c.check("GET list (active only)", "get", f"{v1}/memories",
                     list_.sync_detailed(ns, client=client), ListResponse)
    assert len(seen) > len(active.memories) and page.next_after is None, (seen, active)

    body = c.check("GET export (tombstoned too)", "get", f"{v1}/export",
                   export.sync_detailed(ns, client=client, include_tombstoned=True), str)
    lines = body.splitlines()
    records = [MemoryRecord.from_dict(json.loads(line)) for line in lines]
    for i, line in enumerate(lines):
        errors = c.schema_errors(json.loads(line), "#/components/schemas/MemoryRecord")
        if errors or extra_fields(records[i]):
            raise CheckFailed(f"export line {i + 1} is not a MemoryRecord: {errors or extra_fields(records[i])}")
    assert [m.id for m in records] == seen, (seen, [m.id for m in records])
    say(f"  export: {len(records)} lines, each a MemoryRecord")

    r = c.check("POST restore", "post", f"{v1}/memories/{{id}}/restore",
                restore.sync_detailed(ns, ben, client=client), RestoreResponse)
    assert r.from_ == ben and isinstance(r.restored, MemoryRecord), r

    # A backup of the whole store, to the token that reaches every namespace: the SQLite database
    # `mnemo backup create` writes, holding every memory exported above; the headers say so.
    response = backup.sync_detailed(client=admin)
    f = c.check("POST backup", "post", "/v1/backup", response, File)
    data = f.payload.read()
    headers = {k.lower(): v for k, v in response.headers.items()}
    assert data.startswith(b"SQLite format 3\x00"), data[:16]
    assert int(headers["x-mnemo-backup-bytes"]) == len(data), headers
    assert headers["content-disposition"].startswith('attachment; filename="mnemo-backup-'), headers
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "backup.db")
        with open(path, "wb") as out:
            out.write(data)
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            contents = sorted(row[0] for row in db.execute("SELECT content FROM memories"))
        finally:
            db.close()
    # The restore above added one memory after the export.
    assert len(contents) == int(headers["x-mnemo-backup-memories"]) == len(records) + 1, (contents, headers)
    assert set(m.content for m in records) <= set(contents), (contents, records)
    say(f"  backup: {len(data)} bytes, a SQLite database of {len(contents)} memories")

    # Errors come back as the declared error document.
    c.check_error("POST backup with a namespace's token", "post", "/v1/backup",
                  backup.sync_detailed(client=client), 403)
    c.check_error("POST recall without a token", "post", f"{v1}/recall",
                  recall.sync_detailed(ns, client=anonymous, body=RecallRequest(query="x")), 401)
    c.check_error("GET why of no such memory", "get", f"{v1}/memories/{{id}}",
                  why.sync_detailed(ns, 999_999_999, client=client), 404)
    c.check_error("POST recall with an unknown detail", "post", f"{v1}/recall",
                  recall.sync_detailed(ns, client=client, body=RecallRequest(query="x", detail="verbose")), 400)
    c.check_error("POST restore of an active memory", "post", f"{v1}/memories/{{id}}/restore",
                  restore.sync_detailed(ns, r.restored.id, client=client), 400)
    c.check_error("POST turn with an unknown detail", "post", f"{v1}/turn",
                  turn.sync_detailed(ns, client=client, body=TurnRequest(text="x", detail="verbose")), 400)
    c.check_error("GET escalation of no such escalation", "get", f"{v1}/escalations/{{id}}",
                  escalation.sync_detailed(ns, "e99", client=client), 404)
    c.check_error("GET escalation by a memory's id", "get", f"{v1}/escalations/{{id}}",
                  escalation.sync_detailed(ns, "m1", client=client), 400)
    c.check_error("POST answer to an answered escalation", "post", f"{v1}/escalations/{{id}}/answer",
                  answer.sync_detailed(ns, esc, client=client, body=AnswerRequest(text="Dana")), 409)
    c.check_error("POST dismiss of a dismissed escalation", "post", f"{v1}/escalations/{{id}}/dismiss",
                  dismiss.sync_detailed(ns, other, client=client, body=DismissRequest()), 409)
    c.check_error("GET escalations without a token", "get", f"{v1}/escalations",
                  escalations.sync_detailed(ns, client=anonymous), 401)

    # GET /metrics: Prometheus text (not JSON), so checked by hand: declared media type, and the
    # counters of the calls above in it.
    m = scrape.sync_detailed(client=admin)
    c.calls += 1
    c.covered.add(("get", "/metrics"))
    media, _ = c.response_ref("get", "/metrics")
    served = m.headers.get("content-type", "")
    if m.status_code != 200 or not served.startswith(media):
        raise CheckFailed(f"GET /metrics: HTTP {m.status_code}, {served} (declared {media})")
    text = m.content.decode()
    if 'mnemo_http_requests_total{method="POST",route="/v1/namespaces/{ns}/remember",status="200"}' not in text:
        raise CheckFailed(f"GET /metrics: no count of the remembers above: {text[:500]}")
    say("  GET /metrics: 200, Prometheus text")
    c.check_error("GET /metrics with a namespace's token", "get", "/metrics", scrape.sync_detailed(client=client), 403)

    operations = {(m, p) for p, item in doc["paths"].items() for m in item}
    missed = sorted(operations - c.covered)
    if missed:
        raise CheckFailed(f"operations of the document the client did not call: {missed}")
    return c.calls, len(operations)


def main():
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    base, token, ns, doc_path, admin_token = sys.argv[1:]
    with open(doc_path, encoding="utf-8") as f:
        doc = json.load(f)
    try:
        calls, operations = run(base, token, ns, doc, admin_token)
    except CheckFailed as e:
        say(f"FAILED: {e}")
        sys.exit(1)
    except (AssertionError, KeyError, TypeError, ValueError, AttributeError) as e:
        # A model that would not parse, or an answer not as asserted: where, and what.
        traceback.print_exc(file=sys.stderr)
        say(f"FAILED: {type(e).__name__}: {e}")
        sys.exit(1)
    say(f"the generated client made {calls} calls covering all {operations} operations; every answer typed")


if __name__ == "__main__":
    main()
