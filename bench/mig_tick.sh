#!/usr/bin/env bash
# MIG figures: 8 GPUs x 7 instances (examples/scenarios/mig-8gpu.toml), one
# tarmac-simload in each of the 56 instances.
#  - the agent's CPU per tick against bench/nvml_status_baseline, a bare C
#    program making the same NVML calls (the MIG walk and GPM per instance
#    included), paced alike. Target: at most 1.3x.
#  - /metrics server time with the per-instance series, 50 scrapers.
#    Target: p99 under 2 ms.
# Usage: bench/mig_tick.sh BUILD_DIR [SECONDS]
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
seconds=${2:-20}
root=$(cd "$(dirname "$0")/.." && pwd)
world=$(mktemp -d /tmp/tarmac-mig-bench-XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$world"
}
trap cleanup EXIT
export TARMAC_SIM_SCENARIO="$root/examples/scenarios/mig-8gpu.toml"
export TARMAC_SIM_DIR="$world"
uuids=$("$build/bin/tarmac" status --json --no-agent --backend sim |
  python3 -c "import json,sys; print(' '.join(m['uuid'] for g in json.load(sys.stdin)['gpus'] for m in g['mig_instances']))")
for uuid in $uuids; do
  CUDA_VISIBLE_DEVICES=$uuid "$build/bin/tarmac-simload" --memory 2GiB --util 40 --pattern bursty 2>/dev/null &
  pids+=($!)
done
for _ in $(seq 100); do
  [[ $(ls "$world/loads" 2>/dev/null | wc -l) -ge 56 ]] && break
  sleep 0.1
done
echo "mig: $(ls "$world/loads" | wc -l) loads in $(wc -w <<<"$uuids") MIG instances on 8 GPUs"
export RUSAGE_RUN="$build/bin/rusage_run"
python3 "$root/bench/agent_tick.py" "$build" "$seconds" 10
python3 "$root/bench/metrics_scrape.py" "$build" "$seconds" mig
