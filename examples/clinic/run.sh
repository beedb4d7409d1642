#!/usr/bin/env bash
# A clinic front-desk agent: allergies and doses re-grounded against the records table,
# appointment preferences from memory only. Offline, on simulated time.
# Usage: examples/clinic/run.sh [DATA_DIR]   (default: a fresh temporary directory)
# Needs the built (or installed) binary and the CSV grounder plugin (MNEMO overrides the binary's path):
#   cargo build -p mnemo-cli -p mnemo-plugin-erp
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# The binary: $MNEMO, else the one built in this checkout, else an installed `mnemo` on PATH.
bin="${MNEMO:-$here/../../target/debug/mnemo}"
if [ ! -x "$bin" ] && [ -z "${MNEMO:-}" ] && command -v mnemo >/dev/null; then
  bin="$(command -v mnemo)"
fi
if [ ! -x "$bin" ]; then
  echo "no mnemo binary at $bin and none on PATH; build it first: cargo build -p mnemo-cli -p mnemo-plugin-erp" >&2
  exit 1
fi
dir="${1:-$(mktemp -d)}"
mkdir -p "$dir"
cp "$here/records.csv" "$dir/records.csv"
mnemo() { "$bin" --data-dir "$dir" --config "$here/mnemo.toml" -n clinic "$@"; }

echo "# day 0: the front desk notes what patients say"
mnemo --at 2026-03-02T09:00:00Z remember "[SEM] Ana Ruiz | allergy | none known
[SEM] Ana Ruiz | appointment preference | mornings
[SEM] Ben Okafor | lisinopril dose | 10 mg once daily" --source front-desk
echo "# day 1: a preference restated by another colleague"
mnemo --at 2026-03-03T09:00:00Z remember "[SEM] Ana Ruiz | appointment preference | mornings" --source nurse

echo "# day 10: prescribing for Ana: the records say penicillin; the stale memory is replaced"
mnemo --at 2026-03-12T09:00:00Z recall "Can Ana Ruiz take amoxicillin?" --about "Ana Ruiz | allergy" --budget 256
echo "# day 10: Ben's dose matches the records: confirmed"
mnemo --at 2026-03-12T09:05:00Z recall "Refill Ben Okafor's lisinopril" --about "Ben Okafor | lisinopril dose" --budget 256
echo "# day 20: booking Ana: the preference is in memory only, recent and said twice"
mnemo --at 2026-03-22T09:00:00Z recall "Book Ana Ruiz's follow-up" --about "Ana Ruiz | appointment preference" --budget 256
echo "# day 200: the same preference, unconfirmed for months: the agent turn escalates to a human"
mnemo --at 2026-09-18T09:00:00Z turn "Book Ana Ruiz's follow-up" --about "Ana Ruiz | appointment preference" --budget 256
# The escalation's id, from the same turn as JSON (it reuses the open escalation on this task).
esc="$(mnemo --at 2026-09-18T09:01:00Z turn "Book Ana Ruiz's follow-up" --about "Ana Ruiz | appointment preference" \
  --budget 256 --json | grep -o '"id": "e[0-9]*"' | grep -o 'e[0-9]*')"
echo "# day 200: what the agent asked a human (recalls that escalated asked too)"
mnemo --at 2026-09-18T09:05:00Z escalations --open
echo "# day 200: the receptionist calls Ana and answers $esc: afternoons now"
mnemo --at 2026-09-18T10:00:00Z answer "$esc" "afternoons" --by receptionist
echo "# day 200: the same turn acts on the human's answer, with a plan checked against the pack"
mnemo --at 2026-09-18T10:05:00Z turn "Book Ana Ruiz's follow-up" --about "Ana Ruiz | appointment preference" --budget 256
echo "data left in $dir"
