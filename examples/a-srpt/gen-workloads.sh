#!/usr/bin/env bash
# Regenerate every workload the A-SRPT sweeps in this folder read (docs/a-srpt-results.md).
# Usage: bash examples/a-srpt/gen-workloads.sh [OUT_DIR [recurring|synthesised]]
#        (default ./wl and recurring groups)
# Run each mode in its own scratch folder, then the sweeps from that folder (the specs name
# traces "wl/...", looked up next to the spec first, then in the current folder):
#   mkdir rec && cd rec && bash .../gen-workloads.sh wl                    # recurring groups
#   mkdir syn && cd syn && bash .../gen-workloads.sh wl synthesised        # the old groups
# The CSVs are deterministic in the seed and are not committed; each takes a second or two.
#
# Every file is made on the cluster it is replayed on (-c), at the default load: 3 on the
# body basis (all jobs but the top 1 % by GPU-seconds; gpusched.workloads.a_srpt.DEFAULT_LOAD,
# a documented choice: the paper does not state its load). Sizes: the paper's jobs per GPU
# (Fig. 6: 37,500-150,000 jobs on 2,000 GPUs = 18.75-75 jobs per GPU) on a-srpt-32x8's 256
# GPUs: 4,800 / 9,600 / 14,400 / 19,200. Figs. 7 and 8 (the paper: 75,000 jobs) use 4,800,
# half the paper's jobs per GPU, to keep the whole re-run within about 2 h of CPU.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-wl}
KIND=${2:-recurring}
mkdir -p "$OUT"
SEEDS=${SEEDS:-"1 2 3 4 5"}
C="$HERE/a-srpt-32x8.toml"
for s in $SEEDS; do
  # Fig. 6 (number of jobs), Fig. 9 and the ablation (9,600 jobs): Philly's GPU counts
  for n in 4800 9600 14400 19200; do
    gpusched workload a-srpt --groups "$KIND" --jobs "$n" --seed "$s" -c "$C" \
      -o "$OUT/jobs$n-s$s.csv" > /dev/null
  done
  # Fig. 7 (share of single-GPU jobs) and, at 0 %, Fig. 8 (NIC bandwidth): 4,800 jobs
  for f in 0.8 0.6 0.4 0.2 0.0; do
    gpusched workload a-srpt --groups "$KIND" --jobs 4800 --seed "$s" --single-gpu-fraction "$f" \
      -c "$C" -o "$OUT/single$f-s$s.csv" > /dev/null
  done
  # the ablation's other reading of the performance model: iterations derived under it
  gpusched workload a-srpt --groups "$KIND" --jobs 9600 --seed "$s" \
    -c "$HERE/a-srpt-32x8-literal.toml" -o "$OUT/literal9600-s$s.csv" > /dev/null
done
