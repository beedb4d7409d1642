// Starts `mnemo serve` on a free 127.0.0.1 port against a throw-away data directory, with
// bearer tokens from a config file (as scripts/openapi-check does), for the tests and for
// `npm run generate`. Nothing here is part of the published client.
//
//   const server = await startServer();   // MNEMO_BIN, else ../../target/debug/mnemo
//   server.base                            // http://127.0.0.1:PORT
//   server.tokens.agent / .admin           // see TOKENS below
//   await server.stop();                   // SIGTERM, waits for a clean exit, removes the dir
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { accessSync, constants, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The package's directory (clients/typescript). */
export const PACKAGE_DIR = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** The namespaces the test token reaches. */
export const NAMESPACES = ["ts-client", "ts-client-at"];

/** The mnemo binary: $MNEMO_BIN (relative to the working directory), else the workspace's debug build. */
export function mnemoBin() {
  const bin = process.env.MNEMO_BIN
    ? resolve(process.env.MNEMO_BIN)
    : resolve(PACKAGE_DIR, "../../target/debug/mnemo");
  try {
    accessSync(bin, constants.X_OK);
  } catch {
    throw new Error(
      `${bin} is not an executable: build it (cargo build -p mnemo-cli --features server) or set MNEMO_BIN`,
    );
  }
  return bin;
}

const token = (name) => `ts-client-${name}-${randomBytes(16).toString("hex")}`;

/**
 * Starts the server; resolves once it says where it listens (30 s at most).
 * Tokens: `agent` (principal "ts-client", the namespaces of NAMESPACES, answers = true: it may
 * answer and dismiss escalations) and `admin` (principal "ts-client-admin", every namespace: the
 * one POST /v1/backup takes).
 */
export async function startServer({ bin = mnemoBin() } = {}) {
  const dir = mkdtempSync(join(tmpdir(), "mnemo-ts-client."));
  const tokens = { agent: token("agent"), admin: token("admin") };
  writeFileSync(
    join(dir, "serve.toml"),
    `[[serve.tokens]]
principal = "ts-client"
token_env = "MNEMO_TS_CLIENT_TOKEN"
namespaces = ${JSON.stringify(NAMESPACES)}
answers = true

[[serve.tokens]]
principal = "ts-client-admin"
token_env = "MNEMO_TS_CLIENT_ADMIN_TOKEN"
namespaces = ["*"]
erase = true
`,
  );
  const child = spawn(
    bin,
    ["--data-dir", join(dir, "data"), "--config", join(dir, "serve.toml"), "serve", "--addr", "127.0.0.1:0"],
    {
      env: { ...process.env, MNEMO_TS_CLIENT_TOKEN: tokens.agent, MNEMO_TS_CLIENT_ADMIN_TOKEN: tokens.admin },
      stdio: ["ignore", "ignore", "pipe"],
    },
  );
  let log = "";
  const exited = new Promise((done) => child.on("exit", (code, signal) => done({ code, signal })));
  const remove = () => rmSync(dir, { recursive: true, force: true });

  const base = await new Promise((ok, fail) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      fail(new Error(`${bin} serve did not say where it listens within 30 s:\n${log}`));
    }, 30_000);
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk) => {
      log += chunk;
      const m = /^mnemo: listening on (http:\/\/127\.0\.0\.1:\d+)/m.exec(log);
      if (m) {
        clearTimeout(timer);
        ok(m[1]);
      }
    });
    child.on("error", (e) => {
      clearTimeout(timer);
      fail(new Error(`cannot start ${bin}: ${e.message}`));
    });
    exited.then(({ code, signal }) => {
      clearTimeout(timer);
      fail(new Error(`${bin} serve exited (${signal ?? code}) before listening:\n${log}`));
    });
  }).catch((e) => {
    remove();
    throw e;
  });

  return {
    base,
    tokens,
    bin,
    log: () => log,
    /** SIGTERM, then a clean exit (code 0) within 30 s, else an error with the server's log. */
    async stop() {
      try {
        if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
        const timeout = new Promise((done) => setTimeout(() => done(null), 30_000).unref());
        const end = await Promise.race([exited, timeout]);
        if (end === null) {
          child.kill("SIGKILL");
          throw new Error(`${bin} serve did not stop within 30 s of SIGTERM:\n${log}`);
        }
        if (end.code !== 0) throw new Error(`${bin} serve stopped with ${end.signal ?? end.code}:\n${log}`);
      } finally {
        remove();
      }
    },
  };
}

/** The OpenAPI document as committed: the served JSON, pretty-printed (two spaces), one newline at the end. */
export function canonicalDocument(text) {
  return JSON.stringify(JSON.parse(text), null, 2) + "\n";
}

/** The committed openapi.json. */
export function committedDocument() {
  return readFileSync(join(PACKAGE_DIR, "openapi.json"), "utf8");
}
