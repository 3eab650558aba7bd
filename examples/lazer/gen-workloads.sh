#!/usr/bin/env bash
# Regenerate every workload the Lazer runs read (docs/lazer.md, "Results").
# Usage: bash examples/lazer/gen-workloads.sh [OUT_DIR]     (default ./wl)
# Run the specs from the folder that holds OUT_DIR (they name traces "wl/..."). The CSVs
# are deterministic in the seed and are not committed (the full-size ones are 15-35 MB).
set -euo pipefail
OUT=${1:-wl}
mkdir -p "$OUT"
SEEDS=${SEEDS:-"1 2 3"}
for s in $SEEDS; do
  for c in earth saturn uranus; do
    # Table 2: the paper's setting, every option at its default (all jobs of Table 1,
    # Helios-shaped arrivals at Table 1's rate, copula sizes, 113 s loads and 8 s saves)
    gpusched workload "lazer-$c" --seed "$s" -o "$OUT/$c-s$s.csv"
    # the ablation: one of causes 2-4 of issue 29 switched back at a time ...
    gpusched workload "lazer-$c" --seed "$s" --overheads checkpoint -o "$OUT/$c-ckpt-s$s.csv"
    gpusched workload "lazer-$c" --seed "$s" --arrivals poisson -o "$OUT/$c-pois-s$s.csv"
    gpusched workload "lazer-$c" --seed "$s" --sizes independent -o "$OUT/$c-indep-s$s.csv"
    # ... and the inputs before it, all three back, at the offered load 0.9 it used
    gpusched workload "lazer-$c" --seed "$s" --overheads checkpoint --arrivals poisson \
      --sizes independent --load 0.9 -o "$OUT/$c-before-s$s.csv"
  done
  # Sec. 5.2 (Fig. 8): the testbed's 100-job sample of Earth
  gpusched workload lazer-earth --jobs 100 --seed "$s" -o "$OUT/earth100-s$s.csv"
done
