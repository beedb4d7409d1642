// `npm run generate`: regenerates openapi.json and src/schema.ts from the server itself.
//   1. starts `mnemo serve` ($MNEMO_BIN, else ../../target/debug/mnemo) on a free 127.0.0.1 port
//      against a throw-away data directory;
//   2. fetches /openapi.json and writes it to openapi.json, pretty-printed (key order as served,
//      two spaces, one newline at the end: the same document always gives the same bytes);
//   3. runs openapi-typescript (the pinned devDependency) on it into src/schema.ts;
//   4. stops the server.
// The tests (test/client.test.mjs) fail when either file differs from what this would write.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

import { PACKAGE_DIR, canonicalDocument, startServer } from "./serve.mjs";

/** The command that regenerates both files (named by the checks that find them stale). */
export const REGENERATE =
  "cargo build -p mnemo-cli --features server, then: cd clients/typescript && npm run generate (MNEMO_BIN=/path/to/mnemo for another binary)";

/** Runs the pinned openapi-typescript on `docPath`, writing `outPath`. */
export function generateTypes(docPath, outPath) {
  const require = createRequire(join(PACKAGE_DIR, "package.json"));
  const cli = join(require.resolve("openapi-typescript/package.json"), "..", "bin", "cli.js");
  const r = spawnSync(process.execPath, [cli, docPath, "--output", outPath], {
    cwd: PACKAGE_DIR,
    encoding: "utf8",
  });
  if (r.status !== 0) {
    throw new Error(`openapi-typescript failed (${r.status ?? r.signal}):\n${r.stdout}${r.stderr}`);
  }
}

/** The schema.ts that openapi-typescript writes for the document text `doc`. */
export function typesFor(doc) {
  const dir = mkdtempSync(join(tmpdir(), "mnemo-ts-types."));
  try {
    writeFileSync(join(dir, "openapi.json"), doc);
    generateTypes(join(dir, "openapi.json"), join(dir, "schema.ts"));
    return readFileSync(join(dir, "schema.ts"), "utf8");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main() {
  const server = await startServer();
  let doc;
  try {
    const url = `${server.base}/openapi.json`;
    const res = await fetch(url);
    if (res.status !== 200) throw new Error(`GET ${url}: HTTP ${res.status}`);
    doc = canonicalDocument(await res.text());
  } finally {
    await server.stop();
  }
  const docPath = join(PACKAGE_DIR, "openapi.json");
  writeFileSync(docPath, doc);
  generateTypes(docPath, join(PACKAGE_DIR, "src", "schema.ts"));
  console.error(`generate: wrote openapi.json and src/schema.ts from ${server.bin}`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((e) => {
    console.error(`generate: FAILED: ${e.message}`);
    process.exit(1);
  });
}
