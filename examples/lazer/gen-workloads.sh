#!/usr/bin/env bash
# Regenerate every workload the Lazer runs in this folder read (docs/lazer.md).
# Usage: bash examples/lazer/gen-workloads.sh [OUT_DIR]     (default ./wl)
# Run the sweeps from the folder that holds OUT_DIR (the specs name traces "wl/...").
# The CSVs are deterministic in the seed and are not committed (the full-size ones are
# tens of MB).
set -euo pipefail
OUT=${1:-wl}
mkdir -p "$OUT"
SEEDS=${SEEDS:-"1 2 3"}
for s in $SEEDS; do
  # Table 2: the full-size Helios-like workloads (427k / 698k / 329k jobs)
  for c in earth saturn uranus; do
    gpusched workload "lazer-$c" --seed "$s" -o "$OUT/$c-s$s.csv"
  done
  # Sec. 5.2: the testbed's 100-job sample of Earth
  gpusched workload lazer-earth --jobs 100 --seed "$s" -o "$OUT/earth100-s$s.csv"
done
