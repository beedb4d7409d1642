// The client against a real `mnemo serve` ($MNEMO_BIN, else ../../target/debug/mnemo) on a free
// 127.0.0.1 port with a throw-away data directory (scripts/serve.mjs), through the built
// package (dist/: `npm run build` first). Run: npm test (scripts/ts-check does both).
// The tests run in order, on one server: later ones read what earlier ones wrote.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";

import {
  BusyError,
  ConfigError,
  ConflictError,
  ConnectionFailedError,
  InvalidInputError,
  MnemoClient,
  MnemoError,
  ModelError,
  NotFoundError,
  RateLimitedError,
  ReadOnlyError,
  ServerError,
  UnauthorizedError,
  UnextractedError,
  UnsupportedError,
} from "../dist/index.js";
import { REGENERATE, typesFor } from "../scripts/generate.mjs";
import { NAMESPACES, PACKAGE_DIR, canonicalDocument, committedDocument, startServer } from "../scripts/serve.mjs";

const [NS, OTHER_NS] = NAMESPACES;
let server;
/** The agent's client: principal ts-client, namespace NS. */
let mnemo;
const ids = {};

before(async () => {
  server = await startServer();
  mnemo = new MnemoClient({ url: server.base, token: server.tokens.agent, namespace: NS });
});

after(async () => {
  await server?.stop();
});

/** Fails naming the first line where `actual` differs from `expected`, and how to regenerate. */
function assertSameText(actual, expected, what) {
  if (actual === expected) return;
  const a = actual.split("\n");
  const e = expected.split("\n");
  let i = 0;
  while (i < a.length && i < e.length && a[i] === e[i]) i++;
  assert.fail(
    `${what}, from line ${i + 1}:\n  committed: ${JSON.stringify(a[i] ?? "(end of file)")}\n` +
      `  expected:  ${JSON.stringify(e[i] ?? "(end of file)")}\nregenerate both files: ${REGENERATE}`,
  );
}

/** Calls `fn`, which must reject with an instance of `Class`; answers the error. */
async function rejection(fn, Class) {
  try {
    await fn();
  } catch (e) {
    assert.ok(e instanceof Class, `expected ${Class.name}, got ${e?.name}: ${e?.message}`);
    assert.ok(e instanceof MnemoError, `${e.name} is not a MnemoError`);
    assert.equal(e.name, Class.name);
    return e;
  }
  assert.fail(`expected ${Class.name}, but the call succeeded`);
}

/** POST `path` with `body` as the agent, without the client: the server's own answer. */
async function rawPost(path, body) {
  const res = await fetch(`${server.base}/v1/namespaces/${NS}/${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${server.tokens.agent}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

test("the committed openapi.json is the document the server serves", async () => {
  const res = await fetch(`${server.base}/openapi.json`);
  assert.equal(res.status, 200);
  assertSameText(
    committedDocument(),
    canonicalDocument(await res.text()),
    `clients/typescript/openapi.json differs from ${server.bin}'s /openapi.json`,
  );
});

test("src/schema.ts is what openapi-typescript makes of openapi.json", () => {
  const committed = readFileSync(join(PACKAGE_DIR, "src", "schema.ts"), "utf8");
  assertSameText(committed, typesFor(committedDocument()), "clients/typescript/src/schema.ts is stale");
});

test("health and ready answer without a token", async () => {
  const anonymous = new MnemoClient({ url: `${server.base}/` });
  assert.deepEqual(await anonymous.health(), { status: "ok", store_rev: null });
  const ready = await anonymous.ready();
  assert.equal(ready.status, "ready");
  assert.equal(typeof ready.store_rev, "number");
});

test("remember: a newer value of a one-valued claim supersedes the older", async () => {
  const ben = await mnemo.remember("[SEM] Northwind Labs | owner | Ben");
  assert.equal(ben.principal, "ts-client");
  assert.equal(ben.report.status, "extracted");
  assert.equal(ben.report.outcomes.length, 1);
  assert.equal(ben.report.outcomes[0].kind, "inserted");
  ids.ben = ben.report.outcomes[0].memory;
  assert.match(ids.ben, /^m\d+$/);

  const carla = await mnemo.remember("[SEM] Northwind Labs | owner | Carla", { source: "crm" });
  const [outcome] = carla.report.outcomes;
  assert.equal(outcome.kind, "superseded");
  assert.deepEqual(outcome.tombstoned, [ids.ben]);
  ids.carla = outcome.memory;
  assert.notEqual(ids.carla, ids.ben);
  // The label is sent, and the server says it counts as the token's principal.
  assert.ok(carla.report.notes.some((n) => n.includes('source label "crm"')), carla.report.notes.join("; "));
});

test("recall about the claim acts on Carla, and Ben is not in the text", async () => {
  const r = await mnemo.recall("who owns Northwind Labs", { about: "Northwind Labs | owner" });
  assert.equal(r.decision?.decision, "act", JSON.stringify(r.decision));
  assert.deepEqual(
    r.decision.act_on.map((a) => [a.memory, a.value]),
    [[ids.carla, "Carla"]],
  );
  const text = r.memories.map((m) => m.content).join("\n");
  assert.match(text, /Carla/);
  assert.doesNotMatch(text, /Ben/);

  const full = await mnemo.recall("who owns Northwind Labs", {
    about: { entity: "Northwind Labs", attribute: "owner" },
    detail: "full",
    budget: 512,
    mode: "lexical",
  });
  assert.equal(full.verdict?.decision, "act");
  assert.equal(full.pack.budget, 512);
  assert.ok(full.pack.items.some((i) => i.memory.id === ids.carla), "the full pack holds Carla's memory");

  const raw = await mnemo.recall("Northwind Labs", { raw: true });
  assert.equal(raw.decision, null);
  assert.ok(raw.memories.length > 0);
});

test("list, every page, has Ben's memory tombstoned; one page of active ones has not", async () => {
  const all = await mnemo.list({ all: true, includeTombstoned: true, limit: 1 });
  assert.ok(Array.isArray(all));
  const byId = new Map(all.map((m) => [m.id, m]));
  assert.equal(byId.size, all.length, "no memory twice across pages");
  assert.equal(byId.get(ids.ben)?.status, "tombstoned");
  assert.equal(byId.get(ids.ben)?.superseded_by, ids.carla);
  assert.equal(byId.get(ids.carla)?.status, "active");

  const page = await mnemo.list();
  assert.deepEqual(
    page.memories.map((m) => m.id),
    [ids.carla],
  );
  assert.equal(page.next_after, null);

  const first = await mnemo.list({ limit: 1, includeTombstoned: true });
  assert.deepEqual(
    first.memories.map((m) => m.id),
    [ids.ben],
  );
  assert.equal(first.next_after, ids.ben);
  const rest = await mnemo.list({ all: true, after: first.next_after, includeTombstoned: true });
  assert.deepEqual(
    rest.map((m) => m.id),
    all.slice(1).map((m) => m.id),
  );

  const exported = await mnemo.export({ includeTombstoned: true });
  assert.deepEqual(
    exported.map((m) => m.id),
    all.map((m) => m.id),
  );
  assert.deepEqual(
    (await mnemo.export()).map((m) => m.id),
    [ids.carla],
  );
});

test("why says Ben's memory was superseded by Carla's", async () => {
  const { why } = await mnemo.why(ids.ben);
  assert.equal(why.memory.id, ids.ben);
  assert.equal(why.memory.status.status, "tombstoned");
  assert.match(why.memory.status.reason, /^superseded/);
  assert.equal(why.superseded_by?.id, ids.carla);
  assert.deepEqual(
    why.events.map((e) => e.event),
    ["created", "tombstoned"],
  );
});

test("remember messages: one turn per message, in order; a message not the user's is said by its role", async () => {
  const messages = [
    { role: "user", content: "[SEM] Contoso | buyer | Dana" },
    { role: "assistant", content: "Noted: Dana buys for Contoso." },
  ];
  const reports = await mnemo.remember(messages, { idempotencyKey: "conversation-1" });
  assert.equal(reports.length, 2);
  assert.deepEqual(
    reports.map((r) => r.report.turn.text),
    messages.map((m) => m.content),
  );
  const [t0, t1] = reports.map((r) => Number(r.report.turn.id.slice(1)));
  assert.ok(t0 < t1, `turns in order: ${t0}, ${t1}`);
  assert.equal(reports[0].report.outcomes[0].kind, "inserted");
  ids.dana = reports[0].report.outcomes[0].memory;
  // The user's words carry no label (the token's principal said them); the assistant's its role.
  assert.deepEqual(reports[0].report.notes, []);
  assert.ok(
    reports[1].report.notes.some((n) => n.includes('source label "assistant"')),
    reports[1].report.notes.join("; "),
  );

  // The same conversation with the same key writes nothing again (KEY#0, KEY#1).
  const again = await mnemo.remember(messages, { idempotencyKey: "conversation-1" });
  assert.deepEqual(
    again.map((r) => [r.report.status, r.report.turn.id]),
    reports.map((r) => ["already_recorded", r.report.turn.id]),
  );
  // The key of message 0 with another text is a conflict.
  const e = await rejection(
    () => mnemo.remember([{ role: "user", content: "[SEM] Contoso | buyer | Erik" }], { idempotencyKey: "conversation-1" }),
    ConflictError,
  );
  assert.equal(e.status, 409);
  assert.equal(e.code, "conflict");
  assert.match(e.message, /conversation-1#0/);

  // Refused before anything is sent: nothing to remember, a message without a role.
  let refused = await rejection(() => mnemo.remember([]), InvalidInputError);
  assert.equal(refused.status, 0);
  assert.match(refused.message, /messages is empty/);
  refused = await rejection(() => mnemo.remember([{ content: "hi" }]), InvalidInputError);
  assert.match(refused.message, /message 0 has no role/);
});

test("remember messages with timestamps: each turn is recorded at its message's time", async (t) => {
  const doc = JSON.parse(committedDocument());
  if (!("at" in (doc.components.schemas.RememberRequest.properties ?? {}))) {
    t.skip("this server's remember takes no `at` (RememberRequest has no such field in openapi.json)");
    return;
  }
  const messages = [
    { role: "user", content: "[SEM] Fabrikam | owner | Gus", timestamp: "2024-01-05T09:00:00Z" },
    { role: "assistant", content: "Noted: Gus owns Fabrikam.", timestamp: new Date("2024-01-05T09:05:00Z") },
  ];
  const reports = await mnemo.remember(messages, { namespace: OTHER_NS });
  assert.deepEqual(
    reports.map((r) => r.report.turn.at),
    [Date.parse("2024-01-05T09:00:00Z"), Date.parse("2024-01-05T09:05:00Z")],
  );
  assert.deepEqual(
    reports.map((r) => r.report.turn.namespace),
    [OTHER_NS, OTHER_NS],
  );
  // A date alone is midnight UTC.
  const later = await mnemo.remember("[SEM] Fabrikam | site | Oslo", { namespace: OTHER_NS, at: "2024-01-06" });
  assert.equal(later.report.turn.at, Date.parse("2024-01-06T00:00:00Z"));
  // Time only moves forward in a namespace: a turn before its last one is refused.
  const e = await rejection(
    () => mnemo.remember("[SEM] Fabrikam | site | Bergen", { namespace: OTHER_NS, at: "2024-01-01" }),
    InvalidInputError,
  );
  assert.equal(e.status, 400);
  assert.equal(e.code, "invalid_input");

  // A time that is not one is refused before anything is sent, as the client's own error.
  const before = (await mnemo.list({ all: true, includeTombstoned: true, namespace: OTHER_NS })).length;
  for (const at of [new Date("not a time"), Number.NaN, Number.POSITIVE_INFINITY, { when: "now" }]) {
    const refused = await rejection(() => mnemo.remember("[SEM] Fabrikam | site | Rome", { namespace: OTHER_NS, at }), InvalidInputError);
    assert.equal(refused.status, 0);
    assert.equal(refused.code, "invalid_input");
    assert.match(refused.message, /^at /);
  }
  const refused = await rejection(
    () => mnemo.remember([{ role: "user", content: "[SEM] Fabrikam | site | Rome" }], { namespace: OTHER_NS, at: new Date(Number.NaN) }),
    InvalidInputError,
  );
  assert.match(refused.message, /at is not a valid time/);
  assert.equal((await mnemo.list({ all: true, includeTombstoned: true, namespace: OTHER_NS })).length, before, "nothing was sent");
});

test("recall asOf a past time answers what memory held then; history lists a claim's values", async () => {
  const ns = OTHER_NS;
  await mnemo.remember("[SEM] Acme | lead time | 21 days", { namespace: ns, at: "2026-01-01" });
  await mnemo.remember("[SEM] Acme | lead time | 35 days", { namespace: ns, at: new Date("2026-01-21T00:00:00Z") });
  const then = await mnemo.recall("Acme lead time", { namespace: ns, asOf: new Date("2026-01-11T00:00:00Z") });
  const acme = (r) => r.memories.map((m) => m.content).filter((c) => c.startsWith("Acme"));
  assert.deepEqual(acme(then), ["Acme | lead time | 21 days"]);
  const now = await mnemo.recall("Acme lead time", { namespace: ns });
  assert.deepEqual(acme(now), ["Acme | lead time | 35 days"]);
  const h = await mnemo.history("Acme | lead time", { namespace: ns });
  assert.deepEqual(
    h.history.values.map((v) => [v.value, v.recorded_at, v.ended_at ?? null]),
    [
      ["21 days", "2026-01-01T00:00:00Z", "2026-01-21T00:00:00Z"],
      ["35 days", "2026-01-21T00:00:00Z", null],
    ],
  );
  const refused = await rejection(() => mnemo.recall("Acme", { namespace: ns, asOf: new Date(Number.NaN) }), InvalidInputError);
  assert.match(refused.message, /^asOf /);
  await mnemo.remember("[EPI] Shipped 5 crates to Acme", { namespace: ns, at: "2026-01-22" });
  const shipped = (r) => r.memories.some((m) => m.content === "Shipped 5 crates to Acme");
  assert.ok(shipped(await mnemo.recall("Acme crates shipped", { namespace: ns, raw: true, since: "2026-01-22", until: new Date("2026-01-23T00:00:00Z") })));
  assert.ok(!shipped(await mnemo.recall("Acme crates shipped", { namespace: ns, raw: true, until: "2026-01-22" })));
  // World time: what was true in 2020 is the Lisbon of 2019 to 2021, replaced since.
  await mnemo.remember("[SEM from=2019 to=2021] Ben | city | Lisbon", { namespace: ns, at: "2026-01-23" });
  await mnemo.remember("[SEM from=2022] Ben | city | Porto", { namespace: ns, at: "2026-01-24" });
  const city = async (validAt) =>
    (await mnemo.recall("Ben city", { namespace: ns, raw: true, validAt })).memories.map((m) => m.content);
  assert.deepEqual(await city(new Date("2020-06-01T00:00:00Z")), ["Ben | city | Lisbon"]);
  assert.deepEqual(await city("2023-06-01"), ["Ben | city | Porto"]);
  const ben = await mnemo.history("Ben | city", { namespace: ns });
  assert.deepEqual(
    ben.history.values.map((v) => [v.value, v.valid_from ?? null, v.valid_to ?? null]),
    [
      ["Lisbon", "2019-01-01", "2022-01-01"],
      ["Porto", "2022-01-01", null],
    ],
  );
  const wrong = await rejection(() => mnemo.recall("Ben", { namespace: ns, validAt: new Date(Number.NaN) }), InvalidInputError);
  assert.match(wrong.message, /^validAt /);
});

test("erase: refused to a token without the erase scope; with it, a dry run, then the value is gone", async () => {
  const ns = OTHER_NS;
  await mnemo.remember("[SEM] Gus | phone | +1 555 0142", { namespace: ns });
  const refused = await rejection(() => mnemo.erase("Gus | phone", { namespace: ns, reason: "asked" }), UnauthorizedError);
  assert.equal(refused.status, 403);
  assert.match(refused.message, /erase/);
  const admin = new MnemoClient({ url: server.base, token: server.tokens.admin, namespace: ns });
  const preview = await admin.erase("Gus | phone", { reason: "asked", dryRun: true });
  assert.match(preview.text, /555 0142/);
  const done = await admin.erase("Gus | phone", { reason: "asked" });
  assert.doesNotMatch(done.text, /555 0142/);
  const all = await admin.export({ includeTombstoned: true });
  assert.ok(!JSON.stringify(all).includes("555 0142"), "no export holds the erased number");
});

test("errors of the server's kinds: each code as its class, with Retry-After", async () => {
  // A stand-in answering each of the server's error documents (statuses and codes as
  // crates/mnemo-server/src/error.rs answers them).
  const answers = [
    [429, "rate_limited", "5", RateLimitedError],
    [503, "busy", "1", BusyError],
    [503, "read_only", "30", ReadOnlyError],
    [503, "shutting_down", undefined, BusyError],
    [502, "model_failure", undefined, ModelError],
    [500, "config", undefined, ConfigError],
    [501, "unsupported", undefined, UnsupportedError],
    [500, "unextracted", undefined, UnextractedError],
    [500, "internal", undefined, ServerError],
  ];
  let next;
  const stub = createServer((_, res) => {
    const [status, code, after] = next;
    const headers = { "content-type": "application/json", ...(after ? { "retry-after": after } : {}) };
    res.writeHead(status, headers).end(JSON.stringify({ error: { code, message: `${code} said` } }));
  });
  await new Promise((ok) => stub.listen(0, "127.0.0.1", ok));
  try {
    const c = new MnemoClient({ url: `http://127.0.0.1:${stub.address().port}`, token: "x", namespace: "n" });
    for (const answer of answers) {
      next = answer;
      const [status, code, after, Class] = answer;
      const e = await rejection(() => c.recall("q"), Class);
      assert.deepEqual([e.status, e.code, e.message, e.retryAfter], [status, code, `${code} said`, after && Number(after)]);
      if ([ModelError, ConfigError, UnsupportedError, UnextractedError].includes(Class)) {
        assert.ok(e instanceof ServerError, `${Class.name} is a ServerError`);
      }
    }
  } finally {
    await new Promise((ok) => stub.close(ok));
  }
});

test("a per-call namespace reaches that namespace only", async () => {
  const r = await mnemo.remember("[SEM] Tailspin | pilot | Hana", { namespace: OTHER_NS });
  assert.equal(r.report.turn.namespace, OTHER_NS);
  const here = await mnemo.list({ all: true, includeTombstoned: true });
  assert.ok(!here.some((m) => m.content.includes("Tailspin")), "not in the client's namespace");
  const there = await mnemo.list({ all: true, namespace: OTHER_NS });
  assert.ok(there.some((m) => m.content === "Tailspin | pilot | Hana"), JSON.stringify(there.map((m) => m.content)));
});

test("errors: the server's status, code and message, as the class of their kind", async () => {
  const wrong = new MnemoClient({ url: server.base, token: "not-a-token-of-this-server", namespace: NS });
  let e = await rejection(() => wrong.recall("who owns Northwind Labs"), UnauthorizedError);
  assert.equal(e.status, 401);
  assert.equal(e.code, "unauthorized");
  assert.match(e.message, /bearer token is required/);

  e = await rejection(() => mnemo.list({ namespace: "elsewhere" }), UnauthorizedError);
  assert.equal(e.status, 403);
  assert.equal(e.code, "forbidden");
  assert.match(e.message, /does not reach namespace elsewhere/);

  e = await rejection(() => mnemo.recall("who owns Northwind Labs", { mode: "fuzzy" }), InvalidInputError);
  const served = await rawPost("recall", { query: "who owns Northwind Labs", mode: "fuzzy" });
  assert.equal(served.status, 400);
  assert.equal(e.status, 400);
  assert.equal(e.code, served.body.error.code);
  assert.equal(e.message, served.body.error.message);
  assert.match(e.message, /fuzzy/);
  assert.match(e.url, /\/v1\/namespaces\/ts-client\/recall$/);

  e = await rejection(() => mnemo.recall("x", { detail: "verbose" }), InvalidInputError);
  assert.equal(e.code, "invalid_input");

  e = await rejection(() => mnemo.why("m9999"), NotFoundError);
  assert.equal(e.status, 404);
  assert.equal(e.code, "not_found");
  assert.match(e.message, /m9999/);
});

test("errors without Mnemo's answer: no server, an answer that is not JSON", async () => {
  // A port nothing listens on.
  const closed = createServer();
  await new Promise((ok) => closed.listen(0, "127.0.0.1", ok));
  const port = closed.address().port;
  await new Promise((ok) => closed.close(ok));
  const nobody = new MnemoClient({ url: `http://127.0.0.1:${port}`, token: "x" });
  let e = await rejection(() => nobody.health(), ConnectionFailedError);
  assert.equal(e.status, 0);
  assert.equal(e.code, "network");
  assert.ok(e.message.includes(`http://127.0.0.1:${port}/health`), e.message);

  // Something else on the port: HTML with 200, then with 502.
  let status = 200;
  const other = createServer((_, res) => res.writeHead(status, { "content-type": "text/html" }).end("<html>hi</html>"));
  await new Promise((ok) => other.listen(0, "127.0.0.1", ok));
  try {
    const url = `http://127.0.0.1:${other.address().port}`;
    const c = new MnemoClient({ url, token: "x", namespace: "n" });
    e = await rejection(() => c.why("m1"), ConnectionFailedError);
    assert.equal(e.status, 200);
    assert.equal(e.code, "invalid_response");
    assert.ok(e.message.includes(`${url}/v1/namespaces/n/memories/m1`), e.message);
    assert.match(e.message, /not JSON: <html>hi<\/html>/);
    status = 502;
    e = await rejection(() => c.why("m1"), ServerError);
    assert.equal(e.status, 502);
    assert.equal(e.code, "invalid_response");
    assert.ok(e.message.includes(url), e.message);
  } finally {
    await new Promise((ok) => other.close(ok));
  }
});

test("turn acts on a known claim and escalates on an unknown one", async () => {
  const acts = await mnemo.turn("[SEM] Northwind Labs | owner | Carla", { about: "Northwind Labs | owner" });
  assert.equal(acts.principal, "ts-client");
  assert.equal(acts.remembered.turn.source, "ts-client");
  assert.equal(acts.recall.decision?.decision, "act");
  assert.equal(acts.recall.decision.act_on[0].value, "Carla");
  assert.equal(acts.recall.plan?.faithful, true);
  // The turn's text, and the recall's own text as recall answers it.
  assert.equal(typeof acts.recall.text, "string");
  assert.match(acts.recall.text, /Carla/);
  assert.ok(acts.text.endsWith(acts.recall.text), acts.text);

  const full = await mnemo.turn("who owns Northwind Labs?", { about: "Northwind Labs | owner", detail: "full" });
  assert.equal(full.turn.verdict.decision, "act");
  assert.equal(full.turn.plan?.faithful, true);

  const asks = await mnemo.turn("Who signs off purchase orders at Northwind Labs?", {
    about: "Northwind Labs | approver",
  });
  assert.equal(asks.recall.decision?.decision, "escalate");
  ids.escalation = asks.recall.escalation?.id;
  assert.match(ids.escalation ?? "", /^e\d+$/);
});

test("escalations: listed, read, answered (then the task acts), dismissed", async () => {
  const open = await mnemo.escalations({ openOnly: true });
  assert.deepEqual(
    open.escalations.map((x) => [x.id, x.status]),
    [[ids.escalation, "open"]],
  );
  const one = await mnemo.escalation(ids.escalation);
  assert.equal(one.claim?.attribute, "approver");

  const answered = await mnemo.answer(ids.escalation, "Carla");
  assert.equal(answered.escalation.status, "answered");
  assert.equal(answered.escalation.answer?.value, "Carla");
  assert.equal(answered.escalation.answer?.by, "human:ts-client");
  const acts = await mnemo.turn("Who signs off purchase orders at Northwind Labs?", {
    about: "Northwind Labs | approver",
  });
  assert.equal(acts.recall.decision?.decision, "act");
  assert.equal(acts.recall.decision.act_on[0].value, "Carla");

  const other = await mnemo.turn("Who buys for Fabrikam?", { about: "Fabrikam | buyer" });
  const otherId = other.recall.escalation?.id;
  assert.match(otherId ?? "", /^e\d+$/);
  const dismissed = await mnemo.dismiss(otherId);
  assert.equal(dismissed.status, "dismissed");
  assert.equal(dismissed.dismissal?.by, "human:ts-client");

  assert.deepEqual(
    (await mnemo.escalations({ openOnly: false })).escalations.map((x) => [x.id, x.status]),
    [
      [ids.escalation, "answered"],
      [otherId, "dismissed"],
    ],
  );
  // By default the open ones only, as the Python client: none is left.
  assert.deepEqual((await mnemo.escalations()).escalations, []);
  assert.deepEqual((await mnemo.escalations({ openOnly: true })).escalations, []);
  const e = await rejection(() => mnemo.dismiss(otherId), ConflictError);
  assert.equal(e.code, "conflict");
  await rejection(() => mnemo.escalation("e999"), NotFoundError);
});

test("forget with dryRun previews what it would take, and why, writing nothing", async () => {
  const p = await mnemo.forget("Contoso | buyer", { dryRun: true });
  assert.equal(p.report, undefined);
  assert.deepEqual(
    p.preview?.forget.map((m) => [m.id, m.why]),
    [[ids.dana, "claim entity and attribute match"]],
  );
  assert.match(p.text ?? "", /nothing written/);
  assert.ok((await mnemo.list({ all: true })).some((m) => m.id === ids.dana && m.status === "active"), "still active");
});

test("forget tombstones; restore brings it back as a new memory", async () => {
  const f = await mnemo.forget("Contoso | buyer");
  assert.deepEqual(
    f.report?.outcomes.map((o) => [o.kind, o.memory]),
    [["forgotten", ids.dana]],
  );
  assert.ok(!(await mnemo.list({ all: true })).some((m) => m.id === ids.dana));
  const r = await mnemo.restore(ids.dana);
  assert.equal(r.from, ids.dana);
  assert.notEqual(r.restored.id, ids.dana);
  assert.equal(r.restored.status, "active");
  assert.equal(r.restored.content, "Contoso | buyer | Dana");
  await rejection(() => mnemo.restore(r.restored.id), InvalidInputError);
});

test("backup: the whole store with a token reaching every namespace, refused to the agent's", async () => {
  const admin = new MnemoClient({ url: server.base, token: server.tokens.admin });
  const b = await admin.backup();
  assert.equal(Buffer.from(b.data.subarray(0, 16)).toString("latin1"), "SQLite format 3\0");
  const everywhere =
    (await admin.export({ includeTombstoned: true, namespace: NS })).length +
    (await admin.export({ includeTombstoned: true, namespace: OTHER_NS })).length;
  assert.equal(b.memories, everywhere);
  assert.ok(b.turns > 0);
  assert.match(b.filename ?? "", /^mnemo-backup-.*\.db$/);

  const e = await rejection(() => mnemo.backup(), UnauthorizedError);
  assert.equal(e.status, 403);
  assert.match(e.message, /namespaces = \["\*"\]/);
});
