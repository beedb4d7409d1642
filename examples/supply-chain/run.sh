#!/usr/bin/env bash
# A supply-chain agent session with the `mnemo` CLI, offline, on simulated time.
# Usage: examples/supply-chain/run.sh [DATA_DIR]   (default: a fresh temporary directory)
# Needs the built (or installed) binary and the ERP plugin library (MNEMO overrides the binary's path):
#   cargo build -p mnemo-cli -p mnemo-plugin-erp -p inventory-grounder
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# The binary: $MNEMO, else the one built in this checkout, else an installed `mnemo` on PATH.
bin="${MNEMO:-$here/../../target/debug/mnemo}"
if [ ! -x "$bin" ] && [ -z "${MNEMO:-}" ] && command -v mnemo >/dev/null; then
  bin="$(command -v mnemo)"
fi
if [ ! -x "$bin" ]; then
  echo "no mnemo binary at $bin and none on PATH; build it first: cargo build -p mnemo-cli -p mnemo-plugin-erp -p inventory-grounder" >&2
  exit 1
fi
dir="${1:-$(mktemp -d)}"
mkdir -p "$dir"
cp "$here/erp.csv" "$dir/erp.csv"
cp "$here/inventory.db" "$dir/inventory.db"
mnemo() { "$bin" --data-dir "$dir" --config "$here/mnemo.toml" -n supply-chain "$@"; }

echo "# the kinds this agent can use: linked into the binary, and loaded from plugin libraries"
mnemo plugins | grep grounder
echo "# day 0: the buyer states the lead time and a routine"
day0="$(mnemo --at 2026-07-01T09:00:00Z remember "[SEM] IC-MC-44 from S-208 | lead time | 21 days
[PROC] Always add a 5-day buffer for S-208 orders.")"
echo "$day0"
# Ids are opaque (per namespace): take the lead-time memory's from the first outcome line.
lead_time_id="$(echo "$day0" | awk '{for (i = 1; i < NF; i++) if ($i == "memory") { print $(i + 1); exit }}')"
echo "# day 3: an event"
mnemo --at 2026-07-04T09:00:00Z remember "[EPI] S-208 warned of congestion at the port of Busan."
echo "# day 30: the agent is asked to reorder; the ERP says 35 days"
mnemo --at 2026-07-31T09:00:00Z recall "Reorder IC-MC-44 from S-208: when will it arrive?" \
  --about "IC-MC-44 from S-208 | lead time" --budget 256
echo "# day 30: how many are in stock, and when is the next delivery? (summed from the ledger)"
mnemo --at 2026-07-31T09:05:00Z remember "[SEM] IC-MC-44 | stock on hand | 500 units"
mnemo --at 2026-07-31T09:10:00Z recall "How many IC-MC-44 are on hand?" --about "IC-MC-44 | stock on hand" --budget 256
echo "# why is the 21-day value gone?"
mnemo why "$lead_time_id"
echo "# day 60: the episode has faded"
mnemo --at 2026-08-30T09:00:00Z decay
echo "data left in $dir"
