#!/usr/bin/env bash
# Every edge-cloud experiment of docs/a-online.md, then its tables.
# Usage: bash examples/a-online/run.sh [OUT_DIR]   (default runs/a-online)
# Workloads and clusters are regenerated from their seeds (deterministic): nothing is committed.
# SEEDS="1 2 3" by default; POLICIES overrides the policy list; TBJOBS, JOBS and SERVERS the
# sweeps; PARTS the parts to run (testbed fig7 fig8 fig9 ablation fig8ab; all by default).
# Each workload's cluster is drawn from the same seed (--cluster-out): its delays vary by seed.
set -euo pipefail
OUT=${1:-runs/a-online}
SEEDS=${SEEDS:-"1 2 3"}
TBJOBS=${TBJOBS:-"10 20 30 40 50"}
JOBS=${JOBS:-"100 200 300 400 500"}
SERVERS=${SERVERS:-"40 60 80 100 120"}
PARTS=${PARTS:-"testbed fig7 fig8 fig9 ablation fig8ab"}
HERE=$(cd "$(dirname "$0")" && pwd)
read -r -a NAMES <<< "${POLICIES:-a-online a-online-e srtf tiresias-l batchsche}"
ALL=()
for p in "${NAMES[@]}"; do ALL+=(-P "$p"); done
mkdir -p "$OUT/wl"
has() { [[ " $PARTS " == *" $1 "* ]]; }

# one compare: NAME TRACE CLUSTER [policy specs...] (the five by default); a comparison
# already complete is kept (FORCE=1 runs it again), so an interrupted run resumes
run() {
  local name=$1 trace=$2 cluster=$3
  shift 3
  local specs=("${ALL[@]}")
  if (($#)); then specs=("$@"); fi
  if [[ -f "$OUT/$name/comparison.csv" && -z "${FORCE:-}" ]]; then return; fi
  gpusched compare "$trace" -c "$cluster" "${specs[@]}" -o "$OUT/$name" --force >/dev/null
}

# the job-level baselines switched back, one cause at a time: only the policies a variant
# changes run (aggregate.py takes the others from the same seed's base comparison)
variants() {  # OPTION: srtf and tiresias-l given OPTION
  echo -P "srtf:$1" -P "tiresias-l:$1"
}
OLD_BATCHSCHE="batchsche:batches=slot,price_ratio=1,cloud_price=0.5,workers=trace"
OLD_JOBLEVEL="workers=trace,edge_only=false,migrate=false"

for s in $SEEDS; do
  w="$OUT/wl"
  if has testbed; then
    # Figs. 4-6: the testbed (8 edge machines and a ninth as the cloud), J jobs
    for n in $TBJOBS; do
      gpusched workload edge-cloud-testbed --jobs "$n" --seed "$s" -o "$w/tb$n-s$s.csv" \
        --cluster-out "$w/tb-s$s.toml" >/dev/null
      run "testbed-jobs$n-s$s" "$w/tb$n-s$s.csv" "$w/tb-s$s.toml"
    done
  fi
  if has fig7; then
    # Figs. 7, 9, 11: against the number of jobs (100 edge servers)
    for n in $JOBS; do
      gpusched workload edge-cloud-sim --jobs "$n" --seed "$s" -o "$w/sim$n-s$s.csv" \
        --cluster-out "$w/sim100-s$s.toml" >/dev/null
      run "fig7-jobs$n-s$s" "$w/sim$n-s$s.csv" "$w/sim100-s$s.toml"
    done
  fi
  if has fig9; then
    # Fig. 9's counting units (preemptions.py, printed by aggregate.py): 300 jobs on 100
    # edge servers, one replay per policy with its event log (compare keeps none), at the
    # defaults and with the simulator's ablation variants that change a preemptive policy
    gpusched workload edge-cloud-sim --seed "$s" -o "$w/sim300-s$s.csv" \
      --cluster-out "$w/sim100-s$s.toml" >/dev/null
    gpusched workload edge-cloud-sim --seed "$s" -o "$w/sim300-s$s.csv" --ship serial \
      --cluster-out "$w/sim100-serial-s$s.toml" >/dev/null
    for f in 10 100; do
      gpusched workload edge-cloud-sim --seed "$s" --arrival-scale "$f" \
        -o "$w/sim300-x$f-s$s.csv" >/dev/null
    done
    # one replay: VARIANT TRACE CLUSTER POLICY[:OPTIONS] (a finished one is kept)
    ev() {
      local d="$OUT/fig9-$1-s$s/${4%%:*}"
      if [[ -f "$d/events.csv" && -z "${FORCE:-}" ]]; then return; fi
      gpusched replay "$2" -c "$3" -P "$4" --out "$d" --events --force >/dev/null
    }
    base=("$w/sim300-s$s.csv" "$w/sim100-s$s.toml")
    for p in "${NAMES[@]}"; do ev base "${base[@]}" "$p"; done
    for v in workers:workers=trace edgeonly:edge_only=false migrate:migrate=false; do
      for p in srtf tiresias-l; do ev "${v%%:*}" "${base[@]}" "$p:${v#*:}"; done
    done
    for p in a-online a-online-e srtf tiresias-l; do
      ev serial "$w/sim300-s$s.csv" "$w/sim100-serial-s$s.toml" "$p"
      ev load10 "$w/sim300-x10-s$s.csv" "$w/sim100-s$s.toml" "$p"
      ev load100 "$w/sim300-x100-s$s.csv" "$w/sim100-s$s.toml" "$p"
    done
  fi
  if has fig8; then
    # Figs. 8 and 10: against the number of edge servers (300 jobs)
    for m in $SERVERS; do
      gpusched workload edge-cloud-sim --jobs 300 --seed "$s" --servers "$m" \
        --cluster-out "$w/sim$m-s$s.toml" -o "$w/servers$m-s$s.csv" >/dev/null
      run "fig8-servers$m-s$s" "$w/servers$m-s$s.csv" "$w/sim$m-s$s.toml"
    done
  fi
  if has fig8ab; then
    # Fig. 8's A_online-E trend, one factor switched back at a time, against the number of
    # edge servers (300 jobs): the five policies at the defaults; a variant of the job-level
    # baselines runs SRTF and Tiresias-L (the others are the same seed's base runs); serial
    # shipping and the arrival stretches A_online-E and SRTF (its rate's denominator)
    for m in $SERVERS; do
      gpusched workload edge-cloud-sim --jobs 300 --seed "$s" --servers "$m" \
        --cluster-out "$w/sim$m-s$s.toml" -o "$w/servers$m-s$s.csv" >/dev/null
      gpusched workload edge-cloud-sim --jobs 300 --seed "$s" --servers "$m" --ship serial \
        --cluster-out "$w/sim$m-serial-s$s.toml" -o "$w/servers$m-s$s.csv" >/dev/null
      tr=("$w/servers$m-s$s.csv" "$w/sim$m-s$s.toml")
      run "abl-fig8-base-servers$m-s$s" "${tr[@]}"
      for v in workers:workers=trace edgeonly:edge_only=false migrate:migrate=false; do
        # shellcheck disable=SC2046
        run "abl-fig8-${v%%:*}-servers$m-s$s" "${tr[@]}" $(variants "${v#*:}")
      done
      run "abl-fig8-serial-servers$m-s$s" "$w/servers$m-s$s.csv" "$w/sim$m-serial-s$s.toml" \
        -P a-online-e -P srtf
      for f in 10 100; do
        gpusched workload edge-cloud-sim --jobs 300 --seed "$s" --servers "$m" \
          --arrival-scale "$f" --cluster-out "$w/sim$m-s$s.toml" -o "$w/servers$m-x$f-s$s.csv" \
          >/dev/null
        run "abl-fig8-load$f-servers$m-s$s" "$w/servers$m-x$f-s$s.csv" "$w/sim$m-s$s.toml" \
          -P a-online-e -P srtf
      done
    done
  fi
  if has ablation; then
    # one cause switched back at a time, on the testbed (30 jobs) and the simulator (300)
    gpusched workload edge-cloud-testbed --seed "$s" -o "$w/tb30-s$s.csv" \
      --cluster-out "$w/tb-s$s.toml" >/dev/null
    gpusched workload edge-cloud-testbed --seed "$s" -o "$w/tb30-s$s.csv" --cloud unbounded \
      --cluster-out "$w/tb-free-s$s.toml" >/dev/null
    gpusched workload edge-cloud-sim --seed "$s" -o "$w/sim300-s$s.csv" \
      --cluster-out "$w/sim100-s$s.toml" >/dev/null
    gpusched workload edge-cloud-sim --seed "$s" -o "$w/sim300-s$s.csv" --ship serial \
      --cluster-out "$w/sim100-serial-s$s.toml" >/dev/null
    for wl in tb30 sim300; do
      if [[ $wl == tb30 ]]; then cl="$w/tb-s$s.toml"; else cl="$w/sim100-s$s.toml"; fi
      run "abl-$wl-base-s$s" "$w/$wl-s$s.csv" "$cl"
      # shellcheck disable=SC2046
      run "abl-$wl-workers-s$s" "$w/$wl-s$s.csv" "$cl" $(variants workers=trace)
      # shellcheck disable=SC2046
      run "abl-$wl-edgeonly-s$s" "$w/$wl-s$s.csv" "$cl" $(variants edge_only=false)
      # shellcheck disable=SC2046
      run "abl-$wl-migrate-s$s" "$w/$wl-s$s.csv" "$cl" $(variants migrate=false)
      run "abl-$wl-batches-s$s" "$w/$wl-s$s.csv" "$cl" -P "$OLD_BATCHSCHE"
      for f in 10 100; do
        if [[ $wl == tb30 ]]; then
          gpusched workload edge-cloud-testbed --seed "$s" --arrival-scale "$f" \
            -o "$w/$wl-x$f-s$s.csv" >/dev/null
        else
          gpusched workload edge-cloud-sim --seed "$s" --arrival-scale "$f" \
            -o "$w/$wl-x$f-s$s.csv" >/dev/null
        fi
        run "abl-$wl-load$f-s$s" "$w/$wl-x$f-s$s.csv" "$cl"
      done
    done
    # the cloud: the testbed's unbounded (the paper's model), the simulator's serial shipping
    run "abl-tb30-cloud-s$s" "$w/tb30-s$s.csv" "$w/tb-free-s$s.toml"
    run "abl-sim300-cloud-s$s" "$w/sim300-s$s.csv" "$w/sim100-serial-s$s.toml"
    # every cause back at once: the model of the earlier page
    for wl in tb30 sim300; do
      if [[ $wl == tb30 ]]; then cl="$w/tb-free-s$s.toml"; else cl="$w/sim100-s$s.toml"; fi
      run "abl-$wl-allback-s$s" "$w/$wl-s$s.csv" "$cl" -P a-online -P a-online-e \
        -P "srtf:$OLD_JOBLEVEL" -P "tiresias-l:$OLD_JOBLEVEL,thresholds=50,200" -P "$OLD_BATCHSCHE"
    done
  fi
done
python "$HERE/aggregate.py" "$OUT"
