// Type-level checks of the client's signatures (`npm run typecheck`: tsc, nothing emitted):
// the overloads answer the generated schema's types, and wrong options do not compile.
import {
  MnemoClient,
  MnemoError,
  ModelError,
  ReadOnlyError,
  ServerError,
  type AgentRecall,
  type ForgetResponse,
  type ListResponse,
  type MemoryRecord,
  type RecallResponse,
  type RememberResponse,
  type TurnResponse,
  type TurnView,
  type components,
} from "../src/index.js";

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
function assertType<T extends true>(): T | void {}

export async function signatures(mnemo: MnemoClient): Promise<void> {
  // The README's quick start.
  await mnemo.remember("[SEM] Northwind Labs | owner | Carla");
  const r = await mnemo.recall("who owns Northwind Labs", { about: "Northwind Labs | owner" });
  const { why } = await mnemo.why(r.memories[0]!.id);
  assertType<Equal<typeof why, components["schemas"]["WhyReport"]>>();

  assertType<Equal<typeof r, AgentRecall>>();
  const full = await mnemo.recall("q", { detail: "full", about: { entity: "Acme", attribute: "owner" } });
  assertType<Equal<typeof full, RecallResponse>>();
  assertType<Equal<Awaited<ReturnType<typeof mnemo.remember>>, RememberResponse[]>>();
  const one = await mnemo.remember("text", { at: new Date(), idempotencyKey: "k", namespace: "ops" });
  assertType<Equal<typeof one, RememberResponse>>();
  const many = await mnemo.remember([{ role: "user", content: "hi", timestamp: "2026-07-01T09:00:00Z" }]);
  assertType<Equal<typeof many, RememberResponse[]>>();
  assertType<Equal<Awaited<ReturnType<MnemoClient["turn"]>>, TurnView | TurnResponse>>();
  const preview = await mnemo.forget("Ben", { dryRun: true, includePinned: false, namespace: "ops" });
  assertType<Equal<typeof preview, ForgetResponse>>();
  assertType<Equal<NonNullable<typeof preview.preview>, components["schemas"]["ForgetPreview"]>>();
  const view = await mnemo.turn("t");
  assertType<Equal<typeof view, TurnView>>();
  const turn = await mnemo.turn("t", { detail: "full" });
  assertType<Equal<typeof turn, TurnResponse>>();
  const page = await mnemo.list({ limit: 10 });
  assertType<Equal<typeof page, ListResponse>>();
  const all = await mnemo.list({ all: true, includeTombstoned: true });
  assertType<Equal<typeof all, MemoryRecord[]>>();

  const open = await mnemo.escalations();
  assertType<Equal<typeof open, components["schemas"]["EscalationList"]>>();
  await mnemo.escalations({ openOnly: false });
  const e: MnemoError = new ReadOnlyError("m", 503, "read_only", "u", { retryAfter: 30 });
  assertType<Equal<typeof e.retryAfter, number | undefined>>();
  const model: ServerError = new ModelError("m", 502, "model_failure", "u");
  void model;

  // @ts-expect-error openOnly is a boolean
  await mnemo.escalations({ openOnly: "yes" });
  // @ts-expect-error a mode is lexical, bm25, dense, vector or hybrid
  await mnemo.recall("q", { mode: "fuzzy" });
  // @ts-expect-error detail is compact or full
  await mnemo.turn("t", { detail: "verbose" });
  // @ts-expect-error a message has content
  await mnemo.remember([{ role: "user", text: "hi" }]);
}
