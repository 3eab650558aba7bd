#!/usr/bin/env bash
# Run the A-SRPT re-run of docs/a-srpt-results.md for one kind of groups, from a scratch folder.
# Usage: GROUPS=recurring|synthesised bash examples/a-srpt/run-sweeps.sh [OUT]   (default res)
# Writes the workloads to ./wl (gen-workloads.sh), runs the sweeps into OUT/<spec>, and the
# aggregated tables into OUT/<spec>.md. Recurring groups (the default) also run Fig. 8 and the
# reading ablation; the synthesised groups run Figs. 6, 7 and 9 only. About 40 min of CPU for
# recurring and 25 for synthesised on 2 busy cores (--workers 2). Table II does not depend on
# the workload: python examples/a-srpt/table2-heavy-edge.py --seeds 0 1 2 3 4.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-res}
GROUPS=${GROUPS:-recurring}
mkdir -p "$OUT"
GROUPS="$GROUPS" bash "$HERE/gen-workloads.sh" wl
specs="fig6-jobs fig7-single-gpu fig9-predictors"
[ "$GROUPS" = recurring ] && specs="$specs fig8-nic ablation-reading"
for s in $specs; do
  start=$(date +%s)
  /usr/bin/time -f "$s cpu %U s user %S s sys" -a -o "$OUT/cpu.txt" \
    nice gpusched sweep "$HERE/$s.toml" -o "$OUT/$s" --workers 2 > "$OUT/$s.log" 2>&1
  echo "$s rc=$? wall=$(( $(date +%s) - start )) s" | tee -a "$OUT/walltimes.txt"
  by=trace; [ "$s" = fig8-nic ] && by=cluster
  python "$HERE/aggregate.py" "$OUT/$s/results.csv" "$by" > "$OUT/$s.md"
done
