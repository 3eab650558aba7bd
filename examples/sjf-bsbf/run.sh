#!/usr/bin/env bash
# Every SJF-BSBF experiment of docs/sjf-bsbf.md, then its tables.
# Usage: bash examples/sjf-bsbf/run.sh [OUT_DIR]     (default ./sjf-bsbf-runs; a few minutes)
# Workloads are regenerated from their seeds (deterministic), so nothing is committed.
set -euo pipefail
OUT=${1:-sjf-bsbf-runs}
SEEDS=${SEEDS:-"1 2 3"}
HERE=$(cd "$(dirname "$0")" && pwd)
ALL=(-P fifo -P sjf -P tiresias -P sjf-ffs -P sjf-bsbf)
mkdir -p "$OUT/wl"
for s in $SEEDS; do
  # Tables III and IV: 240 and 480 jobs on the 16 x 4 cluster (C = 2)
  for n in 240 480; do
    gpusched workload sjf-bsbf --jobs "$n" --seed "$s" -o "$OUT/wl/n$n-s$s.csv"
    gpusched compare "$OUT/wl/n$n-s$s.csv" -c sjf-bsbf-16x4 "${ALL[@]}" -o "$OUT/table-n$n-s$s" --force >/dev/null
  done
  # Fig. 6(a): load 0.5x-2x of the 240-job baseline (120-480 jobs in the same 8 hours)
  for l in 0.5 1 1.5 2; do
    gpusched workload sjf-bsbf --load "$l" --seed "$s" -o "$OUT/wl/load$l-s$s.csv"
    gpusched compare "$OUT/wl/load$l-s$s.csv" -c sjf-bsbf-16x4 "${ALL[@]}" -o "$OUT/load$l-s$s" --force >/dev/null
  done
  # Fig. 6(b): one interference ratio injected for every pair, SJF-FFS against SJF-BSBF
  XI=()
  for x in 1.0 1.25 1.5 1.75 2.0; do XI+=(-P "sjf-ffs:xi=$x" -P "sjf-bsbf:xi=$x"); done
  gpusched compare "$OUT/wl/n240-s$s.csv" -c sjf-bsbf-16x4 "${XI[@]}" -o "$OUT/xi-s$s" --force >/dev/null
  # the physical experiment (Table II): 30 jobs on the 4 x 4 testbed
  gpusched workload sjf-bsbf-testbed --seed "$s" -o "$OUT/wl/testbed-s$s.csv"
  gpusched compare "$OUT/wl/testbed-s$s.csv" -c testbed-4x4 -P fifo -P sjf -P tiresias -P sjf-ffs -P sjf-bsbf -o "$OUT/testbed-s$s" --force >/dev/null
done
python "$HERE/aggregate.py" "$OUT"
