#!/usr/bin/env bash
# Every edge-cloud experiment of docs/a-online.md, then its tables.
# Usage: bash examples/a-online/run.sh [OUT_DIR]   (default ./a-online-runs; ~1.5 h on 2 cores)
# Workloads and clusters are regenerated from their seeds (deterministic): nothing is committed.
# SEEDS="1 2 3" by default; POLICIES overrides the policy list; JOBS and SERVERS the sweeps.
set -euo pipefail
OUT=${1:-a-online-runs}
SEEDS=${SEEDS:-"1 2 3"}
JOBS=${JOBS:-"100 200 300 400 500"}
SERVERS=${SERVERS:-"40 60 80 100 120"}
HERE=$(cd "$(dirname "$0")" && pwd)
read -r -a NAMES <<< "${POLICIES:-a-online a-online-e srtf tiresias-l batchsche}"
ALL=()
for p in "${NAMES[@]}"; do ALL+=(-P "$p"); done
mkdir -p "$OUT/wl"
for s in $SEEDS; do
  # the testbed setting (Figs. 4-6): 8 edge servers and the cloud, 30 jobs
  gpusched workload edge-cloud-testbed --seed "$s" -o "$OUT/wl/testbed-s$s.csv" >/dev/null
  gpusched compare "$OUT/wl/testbed-s$s.csv" -c edge-cloud-testbed "${ALL[@]}" -o "$OUT/testbed-s$s" --force >/dev/null
  # Figs. 7 and 9: JCT rate and preemptions against the number of jobs (100 servers)
  for n in $JOBS; do
    gpusched workload edge-cloud-sim --jobs "$n" --seed "$s" -o "$OUT/wl/jobs$n-s$s.csv" >/dev/null
    gpusched compare "$OUT/wl/jobs$n-s$s.csv" -c edge-cloud-sim "${ALL[@]}" -o "$OUT/fig7-jobs$n-s$s" --force >/dev/null
  done
  # Figs. 8 and 10: against the number of edge servers (300 jobs)
  for m in $SERVERS; do
    gpusched workload edge-cloud-sim --jobs 300 --seed "$s" --servers "$m" \
      --cluster-out "$OUT/wl/servers$m-s$s.toml" -o "$OUT/wl/servers$m-s$s.csv" >/dev/null
    gpusched compare "$OUT/wl/servers$m-s$s.csv" -c "$OUT/wl/servers$m-s$s.toml" "${ALL[@]}" \
      -o "$OUT/fig8-servers$m-s$s" --force >/dev/null
  done
done
python "$HERE/aggregate.py" "$OUT"
