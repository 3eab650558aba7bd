#!/usr/bin/env bash
# Regenerate every workload the A-SRPT sweeps in this folder read (docs/a-srpt-results.md).
# Usage: bash examples/a-srpt/gen-workloads.sh [OUT_DIR]     (default ./wl)
# Run the sweeps from the folder that holds OUT_DIR (the specs name traces "wl/...", looked
# up next to the spec first, then in the current folder). Each file takes < 1 s; the CSVs
# are deterministic in the seed and are not committed.
#
# --load is the offered load on 2,000 GPUs (the paper's 250 x 8 cluster, the default of
# `gpusched workload a-srpt --cluster`; these files were made before that option existed). On a-srpt-32x8 (256 GPUs) the offered load is
# --load x 2000/256: 0.128 -> 1.0, 0.256 -> 2.0, 0.512 -> 4.0, 1.024 -> 8.0.
set -euo pipefail
OUT=${1:-wl}
mkdir -p "$OUT"
SEEDS=${SEEDS:-"1 2 3 4 5"}  # SEEDS="101 102 103" makes the tuning set of tau-tune.toml
for s in $SEEDS; do
  # Fig. 6 (number of jobs) and Fig. 9 (predictors, 1000 jobs): Philly's own GPU counts,
  # offered load 4.0 on a-srpt-32x8
  for n in 500 1000 2000 4000; do
    gpusched workload a-srpt --groups synthesised --load-basis all --jobs "$n" --seed "$s" --load 0.512 -o "$OUT/jobs$n-s$s.csv"
  done
  # Fig. 7 (share of single-GPU jobs): 1000 jobs, offered load 4.0 on a-srpt-32x8
  for f in 0.8 0.6 0.4 0.2 0.0; do
    gpusched workload a-srpt --groups synthesised --load-basis all --jobs 1000 --seed "$s" --single-gpu-fraction "$f" --load 0.512 \
      -o "$OUT/single$f-s$s.csv"
  done
  # Fig. 7 again at offered load 1.0 on a-srpt-32x8 (fig7-single-gpu-load1.toml)
  for f in 0.8 0.6 0.4 0.2 0.0; do
    gpusched workload a-srpt --groups synthesised --load-basis all --jobs 1000 --seed "$s" --single-gpu-fraction "$f" --load 0.128 \
      -o "$OUT/single$f-load1-s$s.csv"
  done
  # Fig. 8 (NIC bandwidth): 2000 jobs, 0 % single-GPU (as the paper), offered load 1.0 on
  # the 2,000 GPUs of a-srpt-250x8 (~11,000 GPUs requested by 2000 multi-GPU jobs)
  gpusched workload a-srpt --groups synthesised --load-basis all --jobs 2000 --seed "$s" --single-gpu-fraction 0 --load 1.0 \
    -o "$OUT/nic-single0-s$s.csv"
  # load sensitivity: 1000 jobs, offered load 1, 2, 4, 8 on a-srpt-32x8
  for l in 0.128 0.256 0.512 1.024; do
    gpusched workload a-srpt --groups synthesised --load-basis all --jobs 1000 --seed "$s" --load "$l" -o "$OUT/load$l-s$s.csv"
  done
done
