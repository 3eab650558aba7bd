#!/usr/bin/env bash
# Every PD-ORS experiment of docs/pd-ors.md, then its tables.
# Usage: bash examples/pd-ors/run.sh [OUT_DIR]   (default ./pd-ors-runs; about an hour on 2 cores)
# Workloads are regenerated from their seeds (deterministic), so nothing is committed.
# SEEDS="1 2 3" by default; POLICIES overrides the policy list.
set -euo pipefail
OUT=${1:-pd-ors-runs}
SEEDS=${SEEDS:-"1 2 3"}
HERE=$(cd "$(dirname "$0")" && pwd)
read -r -a NAMES <<< "${POLICIES:-pd-ors oasis fifo-ps drf dorm}"
ALL=()
for p in "${NAMES[@]}"; do ALL+=(-P "$p"); done
mkdir -p "$OUT/wl"
for s in $SEEDS; do
  # Fig. 7 and Fig. 8: total utility against the number of jobs (T = 20, H = 100)
  for n in 20 40 60 80 100; do
    gpusched workload pd-ors --jobs "$n" --horizon 20 --seed "$s" -o "$OUT/wl/jobs$n-s$s.csv" >/dev/null
    gpusched compare "$OUT/wl/jobs$n-s$s.csv" -c pd-ors-100 "${ALL[@]}" -o "$OUT/fig7-jobs$n-s$s" --force >/dev/null
  done
  # Fig. 6: total utility against the number of machines (T = 20, I = 50)
  gpusched workload pd-ors --jobs 50 --horizon 20 --seed "$s" -o "$OUT/wl/jobs50-s$s.csv" >/dev/null
  for h in 10 20 30 50 100; do
    c="pd-ors-$h"
    if [ -f "$HERE/clusters/$c.toml" ]; then c="$HERE/clusters/$c.toml"; fi
    gpusched compare "$OUT/wl/jobs50-s$s.csv" -c "$c" "${ALL[@]}" -o "$OUT/fig6-machines$h-s$s" --force >/dev/null
  done
  # Fig. 9: median training time, T = 80, H = 30, I = 100 (alternating arrivals), and the
  # Philly-arrival variant standing for the Google-trace experiments (Figs. 12-13)
  for a in alternating philly; do
    gpusched workload pd-ors --jobs 100 --horizon 80 --seed "$s" --arrivals "$a" -o "$OUT/wl/t80-$a-s$s.csv" >/dev/null
    gpusched compare "$OUT/wl/t80-$a-s$s.csv" -c pd-ors-30 "${ALL[@]}" -o "$OUT/fig9-$a-s$s" --force >/dev/null
  done
  # Fig. 11: the pre-rounding gain G_delta (H = 100, I = 50, T = 20)
  G=()
  for g in 0.2 0.4 0.6 0.8 1.0 1.2; do G+=(-P "pd-ors:g_delta=$g"); done
  gpusched compare "$OUT/wl/jobs50-s$s.csv" -c pd-ors-100 "${G[@]}" -o "$OUT/fig11-gdelta-s$s" --force >/dev/null
done
python "$HERE/aggregate.py" "$OUT"
