#!/usr/bin/env bash
# Run every A-SRPT sweep of docs/a-srpt-results.md from a scratch folder holding wl/
# (bash examples/a-srpt/gen-workloads.sh wl). Usage: bash examples/a-srpt/run-sweeps.sh [OUT]
# Wall times on 2 shared cores, --workers 2: 19 s to 114 s per sweep, ~10 min in all.
# The tuning sweeps that chose tau (tau-tune*.toml) read wl-tune/: see docs/a-srpt.md choice 2.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-res}
mkdir -p "$OUT"
for s in fig6-jobs fig7-single-gpu fig7-single-gpu-load1 fig8-nic fig9-predictors load ablation tau tau-nic; do
  start=$(date +%s)
  gpusched sweep "$HERE/$s.toml" -o "$OUT/$s" --workers 2
  echo "$s rc=$? wall=$(( $(date +%s) - start )) s" | tee -a "$OUT/walltimes.txt"
done
python "$HERE/aggregate.py" "$OUT/fig8-nic/results.csv" cluster > "$OUT/fig8-nic.md"
python "$HERE/aggregate.py" "$OUT/tau-nic/results.csv" cluster > "$OUT/tau-nic.md"
for s in fig6-jobs fig7-single-gpu fig7-single-gpu-load1 fig9-predictors load ablation tau; do
  python "$HERE/aggregate.py" "$OUT/$s/results.csv" > "$OUT/$s.md"
done
