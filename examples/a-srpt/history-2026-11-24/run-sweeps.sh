#!/usr/bin/env bash
# Run every A-SRPT sweep from a scratch folder holding wl/ (bash examples/a-srpt/gen-workloads.sh
# wl). Usage: bash examples/a-srpt/run-sweeps.sh [OUT]. The first five are the paper's figures
# (docs/a-srpt-results.md, 5 workload seeds: about 1.5 h on 2 busy cores, --workers 2); load,
# ablation, tau and tau-nic are the first re-run's extra analyses
# (docs/a-srpt-results.md; their specs list seeds 1-3).
# The tuning sweeps that chose tau (tau-tune*.toml) read wl-tune/: see docs/a-srpt.md choice 2.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-res}
mkdir -p "$OUT"
for s in fig6-jobs fig7-single-gpu fig8-nic fig9-predictors fig7-single-gpu-load1 load ablation tau tau-nic; do
  start=$(date +%s)
  gpusched sweep "$HERE/$s.toml" -o "$OUT/$s" --workers 2
  echo "$s rc=$? wall=$(( $(date +%s) - start )) s" | tee -a "$OUT/walltimes.txt"
done
python "$HERE/../aggregate.py" "$OUT/fig8-nic/results.csv" cluster > "$OUT/fig8-nic.md"
python "$HERE/../aggregate.py" "$OUT/tau-nic/results.csv" cluster > "$OUT/tau-nic.md"
for s in fig6-jobs fig7-single-gpu fig7-single-gpu-load1 fig9-predictors load ablation tau; do
  python "$HERE/../aggregate.py" "$OUT/$s/results.csv" > "$OUT/$s.md"
done
