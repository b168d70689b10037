#!/usr/bin/env bash
# What tarmac's Slurm prolog and epilog add to a job: `srun --gres=gpu:1
# true` on a one-node Slurm (bench/slurm_local.sh) with the scripts calling
# `tarmac slurm prolog|epilog` against a private agent (fake NVML, 8 GPUs),
# against the same jobs with the scripts exiting at once, interleaved; and
# each script's own run time. Needs root, slurm-wlm and munge.
# Usage: bench/slurm_jobs.sh BUILD_DIR [JOBS]
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
jobs=${2:-40}
root=$(cd "$(dirname "$0")/.." && pwd)
if [[ $(id -u) -ne 0 ]] || ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  echo "slurm_jobs: needs root, slurm-wlm and munge; skipped"
  exit 0
fi
work=$(mktemp -d /tmp/tarmac-slurm-bench-XXXXXX)
cleanup() {
  "$root/bench/slurm_local.sh" stop "$work/slurm" || true
  [[ -f $work/agent.pid ]] && kill "$(cat "$work/agent.pid")" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
printf '[[gpu]]\ncount = 8\nnvlink = "all"\ncpus = "0"\n' > "$work/scenario.toml"
export TARMAC_SIM_SCENARIO="$work/scenario.toml" TARMAC_SIM_DIR="$work/world"
export TARMAC_NVML_LIBRARY="$build/fakenvml/libnvidia-ml.so.1"
printf '[doctor]\nenabled = false\n' > "$work/agent.toml"
"$build/bin/tarmac" agent --config "$work/agent.toml" --socket "$work/t.sock" --state-dir "$work/state" \
  --http-listen off >/dev/null 2>"$work/agent.log" &
echo $! > "$work/agent.pid"
for _ in $(seq 200); do "$build/bin/tarmac" status --socket "$work/t.sock" >/dev/null 2>&1 && break; sleep 0.05; done
# The scripts time themselves; with $work/on absent they exit at once.
for s in prolog epilog; do
  cat > "$work/$s.sh" <<SCRIPT
#!/bin/sh
[ -e $work/on ] || exit 0
t0=\$(date +%s%N)
$build/bin/tarmac slurm $s --socket $work/t.sock >/dev/null 2>>$work/$s.err
echo \$(( (\$(date +%s%N) - t0) / 1000 )) >> $work/$s.us
SCRIPT
  chmod +x "$work/$s.sh"
done
# gres.conf from tarmac, with character devices standing in for /dev/nvidiaN,
# so that Slurm binds GPUs and tells the prolog which (SLURM_JOB_GPUS).
mkdir -p "$work/slurm/dev"
for i in 0 1 2 3 4 5 6 7; do mknod "$work/slurm/dev/nvidia$i" c 1 3; done
"$build/bin/tarmac" slurm gres-conf --backend nvml --node "$(hostname -s)" --dev-dir "$work/slurm/dev" \
  > "$work/slurm/gres.conf"
SLURM_LOCAL_GRES=gpu:nvidia_h100_80gb_hbm3:8 SLURM_LOCAL_EXTRA="Prolog=$work/prolog.sh
Epilog=$work/epilog.sh" "$root/bench/slurm_local.sh" start "$work/slurm" >/dev/null
export SLURM_CONF=$work/slurm/slurm.conf
srun --gres=gpu:1 true  # Warm up.
touch "$work/on"
srun --gres=gpu:1 sh -c "$build/bin/tarmac leases --socket $work/t.sock" | grep -q slurm \
  || { echo "slurm_jobs: the prolog recorded no lease; see $work/prolog.err" >&2; exit 1; }
: > "$work/with.ms"
: > "$work/without.ms"
for i in $(seq "$jobs"); do
  for mode in with without; do
    if [[ $mode == with ]]; then touch "$work/on"; else rm -f "$work/on"; fi
    t0=$(date +%s%N)
    srun --gres=gpu:1 true 2>/dev/null
    echo $(( ($(date +%s%N) - t0) / 1000 )) >> "$work/$mode.ms"
    # The epilog runs after srun returns: let it finish before the next job.
    for _ in $(seq 100); do [[ -z $(squeue -h -o %i 2>/dev/null) ]] && break; sleep 0.02; done
  done
done
python3 - "$work" <<'PY'
import statistics, sys
work = sys.argv[1]
def read(name):
    try:
        return [int(x) / 1000 for x in open(f"{work}/{name}").read().split()]
    except FileNotFoundError:
        return []
w, wo = read("with.ms"), read("without.ms")
pro, epi = read("prolog.us"), read("epilog.us")
med = statistics.median
print(f"srun --gres=gpu:1 true, with tarmac's prolog and epilog   median {med(w):7.1f} ms  ({len(w)} jobs)")
print(f"srun --gres=gpu:1 true, scripts exiting at once (baseline) median {med(wo):7.1f} ms  ({len(wo)} jobs)")
print(f"added to a job (median difference)                         {med(w) - med(wo):7.1f} ms")
if pro and epi:
    print(f"tarmac slurm prolog run time  median {med(pro):6.1f} ms  max {max(pro):6.1f} ms")
    print(f"tarmac slurm epilog run time  median {med(epi):6.1f} ms  max {max(epi):6.1f} ms (after srun returns)")
PY
