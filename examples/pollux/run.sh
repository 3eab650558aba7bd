#!/usr/bin/env bash
# Every Pollux experiment of docs/pollux.md, then its tables.
# Usage: bash examples/pollux/run.sh [OUT_DIR]   (default ./pollux-runs; about 45 minutes on a
# shared 2-core machine, plus about 1.5 minutes per genetic-algorithm run)
# The workloads are the Pollux simulator's own files (bundled), so nothing is committed.
# WORKLOADS picks the workloads (default all 8, the paper's protocol); GA_WORKLOADS those
# the slow genetic-algorithm ablation runs on (default 1).
set -euo pipefail
OUT=${1:-pollux-runs}
WORKLOADS=${WORKLOADS:-"1 2 3 4 5 6 7 8"}
GA_WORKLOADS=${GA_WORKLOADS:-"1"}
SJF_SEEDS=${SJF_SEEDS:-"1 2 3"}
HERE=$(cd "$(dirname "$0")" && pwd)
C=(-c pollux-16x4)
BASE=(-P pollux -P optimus -P tiresias:thresholds=57600)
mkdir -p "$OUT/wl"
for w in $WORKLOADS; do
  # Fig. 7 / Fig. 8a: Pollux against Optimus+Oracle and Tiresias (TunedJobs) at 4 loads
  for l in 0.5 1 1.5 2; do
    gpusched workload pollux --seed "$w" --load "$l" -o "$OUT/wl/load$l-w$w.csv" >/dev/null
    gpusched compare "$OUT/wl/load$l-w$w.csv" "${C[@]}" "${BASE[@]}" -o "$OUT/load$l-w$w" --force >/dev/null
    # the same with the artifact's settings: its measured tables as the truth (a
    # 'throughput' column of 'table'), its Tiresias (every 60 s, queues in arrival order)
    awk -F, -v OFS=, 'NR == 1 {print $0, "throughput"; next} {print $0, "table"}' \
      "$OUT/wl/load$l-w$w.csv" > "$OUT/wl/art$l-w$w.csv"
    gpusched compare "$OUT/wl/art$l-w$w.csv" "${C[@]}" -P pollux -P optimus \
      -P "tiresias:thresholds=57600,interval=60,order=arrival" -o "$OUT/art$l-w$w" --force >/dev/null
  done
  # ablations at load 1: what each difference from the paper is worth
  gpusched compare "$OUT/wl/load1-w$w.csv" "${C[@]}" \
    -P pollux:explore=oracle -P pollux:throughput=refit -P optimus:throughput=refit \
    -P pollux:p=1 -P pollux:p=-10 \
    -P pollux:interval=30 -P pollux:interval=120 -P pollux:interval=240 -P pollux:interval=480 \
    -o "$OUT/ablation-w$w" --force >/dev/null
  # the artifact's measured profile tables as the simulated throughput (a 'throughput'
  # column of 'table'), and Tiresias re-packed every 60 s as the artifact's, on both
  awk -F, -v OFS=, 'NR == 1 {print $0, "throughput"; next} {print $0, "table"}' \
    "$OUT/wl/load1-w$w.csv" > "$OUT/wl/table-w$w.csv"
  gpusched compare "$OUT/wl/table-w$w.csv" "${C[@]}" "${BASE[@]}" -o "$OUT/table-w$w" --force >/dev/null
  gpusched compare "$OUT/wl/load1-w$w.csv" "${C[@]}" -P "tiresias:thresholds=57600,interval=60" \
    -o "$OUT/tper-w$w" --force >/dev/null
  gpusched compare "$OUT/wl/table-w$w.csv" "${C[@]}" -P "tiresias:thresholds=57600,interval=60" \
    -o "$OUT/tpertable-w$w" --force >/dev/null
  # ... and with the artifact's queue order (arrival order within a queue)
  gpusched compare "$OUT/wl/load1-w$w.csv" "${C[@]}" \
    -P "tiresias:thresholds=57600,interval=60,order=arrival" -o "$OUT/tart-w$w" --force >/dev/null
  gpusched compare "$OUT/wl/table-w$w.csv" "${C[@]}" \
    -P "tiresias:thresholds=57600,interval=60,order=arrival" -o "$OUT/tarttable-w$w" --force >/dev/null
  # the realistic set (Table 2's untuned baselines): runs on the measured tables, which have
  # ncf on several GPUs (the generator writes the 'throughput' column); Pollux ignores the
  # trace's configurations, so its run is table-w$w's
  gpusched workload pollux --seed "$w" --load 0 -o "$OUT/wl/real-w$w.csv" >/dev/null
  gpusched compare "$OUT/wl/real-w$w.csv" "${C[@]}" -P optimus -P tiresias:thresholds=57600 \
    -P "tiresias:thresholds=57600,interval=60" -P "tiresias:thresholds=57600,interval=60,order=arrival" \
    -o "$OUT/real-w$w" --force >/dev/null
done
for w in $GA_WORKLOADS; do  # the artifact's optimiser (about 90 s a run against 3 s)
  gpusched compare "$OUT/wl/load1-w$w.csv" "${C[@]}" -P pollux:search=ga -o "$OUT/ga-w$w" --force >/dev/null
done
# the SJF-BSBF paper's Tables III and IV: Pollux on its workloads (240 and 480 jobs)
for s in $SJF_SEEDS; do
  for n in 240 480; do
    gpusched workload sjf-bsbf --jobs "$n" --seed "$s" -o "$OUT/wl/sjf-n$n-s$s.csv" >/dev/null
    gpusched compare "$OUT/wl/sjf-n$n-s$s.csv" -c sjf-bsbf-16x4 -P pollux -o "$OUT/sjf-n$n-s$s" --force >/dev/null
    # what the job model is worth: Tiresias on the same rows under the goodput job model
    # (marked goodput = 1: statistical efficiency, 30 s per start) and under the sharing
    # model (the workload's 30 s per start), as docs/sjf-bsbf.md runs it
    awk -F, -v OFS=, 'NR == 1 {print $0, "goodput"; next} {print $0, 1}' \
      "$OUT/wl/sjf-n$n-s$s.csv" > "$OUT/wl/sjfgp-n$n-s$s.csv"
    cp "$OUT/wl/sjf-n$n-s$s.csv" "$OUT/wl/sjfsh-n$n-s$s.csv"
    gpusched compare "$OUT/wl/sjfgp-n$n-s$s.csv" -c sjf-bsbf-16x4 -P tiresias -o "$OUT/sjfgp-n$n-s$s" --force >/dev/null
    gpusched compare "$OUT/wl/sjf-n$n-s$s.csv" -c sjf-bsbf-16x4 -P tiresias -o "$OUT/sjfsh-n$n-s$s" --force >/dev/null
  done
done
python "$HERE/aggregate.py" "$OUT"
