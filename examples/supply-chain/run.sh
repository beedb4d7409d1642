#!/usr/bin/env bash
# A supply-chain agent session with the `mnemo` CLI, offline, on simulated time.
# Usage: examples/supply-chain/run.sh [DATA_DIR]   (default: a fresh temporary directory)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="${1:-$(mktemp -d)}"
mkdir -p "$dir"
cargo build --quiet --bin mnemo
mnemo() { "$here/../../target/debug/mnemo" --data-dir "$dir" --config "$here/mnemo.toml" -n supply-chain "$@"; }

echo "# day 0: the buyer states the lead time and a routine"
mnemo --at 2026-07-01T09:00:00Z remember "[SEM] IC-MC-44 from S-208 | lead time | 21 days
[PROC] Always add a 5-day buffer for S-208 orders."
echo "# day 3: an event"
mnemo --at 2026-07-04T09:00:00Z remember "[EPI] S-208 warned of congestion at the port of Busan."
echo "# day 30: the agent is asked to reorder; the ERP says 35 days"
mnemo --at 2026-07-31T09:00:00Z recall "Reorder IC-MC-44 from S-208: when will it arrive?" \
  --about "IC-MC-44 from S-208 | lead time" --budget 256
echo "# why is the 21-day value gone?"
mnemo why 1
echo "# day 60: the episode has faded"
mnemo --at 2026-08-30T09:00:00Z decay
echo "data left in $dir"
