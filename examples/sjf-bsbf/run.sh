#!/usr/bin/env bash
# Every SJF-BSBF experiment of docs/sjf-bsbf.md, then its tables.
# Usage: bash examples/sjf-bsbf/run.sh [OUT_DIR]     (default ./sjf-bsbf-runs)
# About 10 minutes of CPU for seeds 1-3. Workloads are regenerated from their seeds
# (deterministic), so nothing is committed. Run folders are named EXPERIMENT__VARIANT-sSEED:
# "defaults" is the paper's setting as gpusched reads it; every other variant switches one
# factor back (the ablation of docs/sjf-bsbf.md).
set -euo pipefail
OUT=${1:-sjf-bsbf-runs}
SEEDS=${SEEDS:-"1 2 3"}
HERE=$(cd "$(dirname "$0")" && pwd)
ALL=(-P fifo -P sjf -P tiresias -P sjf-ffs -P sjf-bsbf)
SHARE=(-P sjf-ffs -P sjf-bsbf)
mkdir -p "$OUT/wl"

run() {  # run FOLDER TRACE CLUSTER POLICIES...
  local folder=$1 trace=$2 cluster=$3
  shift 3
  gpusched compare "$trace" -c "$cluster" "$@" -o "$OUT/$folder" --force >/dev/null
}

ablation() {  # ablation EXPERIMENT SEED TRACE CLUSTER NOMEM_CLUSTER NO_RESTART_TRACE
  local e=$1 s=$2 w=$3 c=$4 nomem=$5 w0=$6
  run "${e}__defaults-s${s}" "$w" "$c" "${ALL[@]}"
  # cause 1: Theorem 1 priced at the ideal placement (both sharing policies)
  run "${e}__placement-ideal-s${s}" "$w" "$c" -P sjf-ffs:placement=ideal -P sjf-bsbf:placement=ideal
  # cause 2: SJF-FFS's first fit in GPU order only
  run "${e}__ffs-gpu-order-s${s}" "$w" "$c" -P sjf-ffs:placement=ideal
  # cause 3: the ratios Gavel measured where its models are the paper's
  run "${e}__xi-gavel-s${s}" "$w" "$c" -P sjf-ffs:xi_model=gavel -P sjf-bsbf:xi_model=gavel
  # cause 4: no restart cost (the same jobs without load_s)
  run "${e}__no-restart-cost-s${s}" "$w0" "$c" "${ALL[@]}"
  # GPU memory unbounded (no gradient accumulation forced by a partner)
  run "${e}__memory-unbounded-s${s}" "$w" "$nomem" "${SHARE[@]}"
  # Tiresias with the single 16 GPU-h threshold of Pollux's simulator (tiresias.py)
  run "${e}__tiresias-pollux-s${s}" "$w" "$c" -P tiresias:thresholds=57600
}

for s in $SEEDS; do
  # Tables III and IV: 240 and 480 jobs on the 16 x 4 cluster (C = 2), with the ablation
  for n in 240 480; do
    w="$OUT/wl/n$n-s$s.csv"
    w0="$OUT/wl/n$n-norestart-s$s.csv"
    wp="$OUT/wl/n$n-philly-s$s.csv"
    gpusched workload sjf-bsbf --jobs "$n" --seed "$s" -o "$w" >/dev/null
    gpusched workload sjf-bsbf --jobs "$n" --seed "$s" --restart-s 0 -o "$w0" >/dev/null
    gpusched workload sjf-bsbf --jobs "$n" --seed "$s" --gpu-counts philly -o "$wp" >/dev/null
    ablation "n$n" "$s" "$w" sjf-bsbf-16x4 "$HERE/sjf-bsbf-16x4-nomem.toml" "$w0"
    # the workload mix: the Philly jobs' own GPU counts (Pollux's workloads-realistic)
    run "n${n}__philly-gpu-counts-s${s}" "$wp" sjf-bsbf-16x4 "${ALL[@]}"
  done
  # Fig. 6(a): load 0.5x and 1.5x of the 240-job baseline (1x and 2x are the tables above)
  for l in 0.5 1.5; do
    gpusched workload sjf-bsbf --load "$l" --seed "$s" -o "$OUT/wl/load$l-s$s.csv" >/dev/null
    run "load${l}__defaults-s${s}" "$OUT/wl/load$l-s$s.csv" sjf-bsbf-16x4 "${ALL[@]}"
  done
  # Fig. 6(b): one interference ratio injected for every pair, SJF-FFS against SJF-BSBF;
  # again with GPU memory unbounded (where xi <= 1.25 should make them equal)
  XI=()
  for x in 1.0 1.25 1.5 1.75 2.0; do XI+=(-P "sjf-ffs:xi=$x" -P "sjf-bsbf:xi=$x"); done
  run "xi__defaults-s${s}" "$OUT/wl/n240-s$s.csv" sjf-bsbf-16x4 "${XI[@]}"
  run "xi__memory-unbounded-s${s}" "$OUT/wl/n240-s$s.csv" "$HERE/sjf-bsbf-16x4-nomem.toml" "${XI[@]}"
  # not in the paper: 8-GPU servers, where gangs of 2-8 GPUs have one server as their ideal
  # placement, so pricing Theorem 1 at the placement matters (cause 1)
  w="$OUT/wl/n2000-64x8-s$s.csv"
  gpusched workload sjf-bsbf --jobs 2000 --seed "$s" -c sjf-bsbf-64x8 -o "$w" >/dev/null
  run "n2000-64x8__defaults-s${s}" "$w" sjf-bsbf-64x8 -P sjf -P tiresias "${SHARE[@]}"
  run "n2000-64x8__placement-ideal-s${s}" "$w" sjf-bsbf-64x8 \
    -P sjf-ffs:placement=ideal -P sjf-bsbf:placement=ideal
  # Table II: the physical experiment, 30 jobs on the 4 x 4 testbed, with the ablation
  w="$OUT/wl/testbed-s$s.csv"
  w0="$OUT/wl/testbed-norestart-s$s.csv"
  gpusched workload sjf-bsbf-testbed --seed "$s" -o "$w" >/dev/null
  gpusched workload sjf-bsbf-testbed --seed "$s" --restart-s 0 -o "$w0" >/dev/null
  ablation testbed "$s" "$w" testbed-4x4 "$HERE/testbed-4x4-nomem.toml" "$w0"
done
python "$HERE/aggregate.py" "$OUT"
