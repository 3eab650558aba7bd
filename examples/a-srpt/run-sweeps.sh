#!/usr/bin/env bash
# Run the A-SRPT re-run of docs/a-srpt-results.md for one kind of groups, from a scratch folder.
# Usage: bash examples/a-srpt/run-sweeps.sh [OUT [recurring|synthesised]]   (default res, recurring)
# Writes the workloads to ./wl (gen-workloads.sh), runs the sweeps into OUT/<spec>, and the
# aggregated tables into OUT/<spec>.md. Recurring groups (the default) also run Fig. 8 and the
# reading ablation; the synthesised groups run Figs. 6, 7 and 9 only. About 40 min of CPU for
# recurring and 25 for synthesised on 2 busy cores (--workers 2). Table II does not depend on
# the workload: python examples/a-srpt/table2-heavy-edge.py --seeds 0 1 2 3 4.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-res}
KIND=${2:-recurring}
mkdir -p "$OUT"
bash "$HERE/gen-workloads.sh" wl "$KIND" || exit 1
specs="fig6-jobs fig7-single-gpu fig9-predictors"
[ "$KIND" = recurring ] && specs="$specs fig8-nic ablation-reading"
for s in $specs; do
  start=$(date +%s)
  /usr/bin/time -f "$s cpu %U s user %S s sys" -a -o "$OUT/cpu.txt" \
    nice gpusched sweep "$HERE/$s.toml" -o "$OUT/$s" --workers 2 > "$OUT/$s.log" 2>&1
  echo "$s rc=$? wall=$(( $(date +%s) - start )) s" | tee -a "$OUT/walltimes.txt"
  case $s in  # Fig. 9's baselines are Fig. 6's runs; Fig. 8's 10 Gbps cells Fig. 7's 0 % runs
    fig9-predictors) more="$OUT/fig6-jobs/results.csv trace" ;;
    fig8-nic) more="$OUT/fig7-single-gpu/results.csv cluster" ;;
    *) more="" ;;
  esac
  python "$HERE/aggregate.py" "$OUT/$s/results.csv" $more > "$OUT/$s.md"
done
