#!/usr/bin/env bats
# tarmac under a real one-node Slurm (Debian's slurm-wlm and munge, started
# by bench/slurm_local.sh in a temporary folder): jobs with --gres=gpu run
# through Slurm's Prolog= and Epilog= calling `tarmac slurm prolog|epilog`
# against a private agent over the fake libnvidia-ml (8 GPUs); slurmd reads
# the gres.conf `tarmac slurm gres-conf` writes. Skipped, saying why, where
# Slurm cannot run (not root, packages missing).

setup_file() {
  if [[ $(id -u) -ne 0 ]] || ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
    return 0
  fi
  export WORK=$(mktemp -d /tmp/tarmac-slurm-XXXXXX)
  # Eight NVLink-joined GPUs whose CPUs this machine has (slurmd checks Cores=).
  printf '[[gpu]]\ncount = 8\nnvlink = "all"\ncpus = "0"\n' > "$WORK/scenario.toml"
  export TARMAC_SIM_SCENARIO="$WORK/scenario.toml"
  export TARMAC_SIM_DIR="$WORK/world"
  export TARMAC_NVML_LIBRARY="$TARMAC_BUILD_DIR/fakenvml/libnvidia-ml.so.1"
  export SOCK="$WORK/t.sock"
  # Jobs idle for 4 s (and 1 s of grace) are cancelled through scancel.
  printf '[doctor]\nenabled = false\n[sampler]\nfast_interval = "200ms"\n[leases]\nidle_grace = "1s"\n[slurm]\nidle_after = "4s"\nidle_policy = "cancel"\ndry_run = false\n' \
    > "$WORK/agent.toml"
  export SLURM_CONF="$WORK/slurm/slurm.conf"  # The agent's scancel reaches this cluster.
  "$TARMAC_BIN_DIR/tarmac" agent --config "$WORK/agent.toml" --socket "$SOCK" --state-dir "$WORK/state" \
    --http-listen off >/dev/null 2>"$WORK/agent.log" 3>&- &
  echo $! > "$WORK/agent.pid"
  for _ in $(seq 200); do "$TARMAC_BIN_DIR/tarmac" status --socket "$SOCK" >/dev/null 2>&1 && break; sleep 0.05; done
  # Slurm's scripts: the commands deploy/slurm/ runs, against this agent.
  for s in prolog epilog; do
    printf '#!/bin/sh\nexec %s slurm %s --socket %s >>%s 2>&1\n' "$TARMAC_BIN_DIR/tarmac" "$s" "$SOCK" \
      "$WORK/$s.log" > "$WORK/$s.sh"
    chmod +x "$WORK/$s.sh"
  done
  # Character devices stand in for /dev/nvidiaN (Slurm binds only those).
  mkdir -p "$WORK/slurm/dev"
  for i in 0 1 2 3 4 5 6 7; do mknod "$WORK/slurm/dev/nvidia$i" c 1 3 2>/dev/null || return 0; done
  # gres.conf as tarmac writes it, with the placeholder device files.
  "$TARMAC_BIN_DIR/tarmac" slurm gres-conf --backend nvml --node "$(hostname -s)" --dev-dir "$WORK/slurm/dev" \
    > "$WORK/slurm/gres.conf"
  SLURM_LOCAL_GRES=gpu:nvidia_h100_80gb_hbm3:8 SLURM_LOCAL_EXTRA="Prolog=$WORK/prolog.sh
Epilog=$WORK/epilog.sh" "$TARMAC_SOURCE_DIR/bench/slurm_local.sh" start "$WORK/slurm" > "$WORK/slurm.out" 2>&1 || true
}

teardown_file() {
  [[ -n "${WORK:-}" ]] || return 0
  "$TARMAC_SOURCE_DIR/bench/slurm_local.sh" stop "$WORK/slurm" || true
  kill "$(cat "$WORK/agent.pid")" 2>/dev/null || true
  pkill -f "$WORK/world" 2>/dev/null || true
  rm -rf "$WORK" 2>/dev/null || { sleep 1; rm -rf "$WORK"; }
}

setup() {
  [[ -n "${WORK:-}" ]] || skip "a real Slurm needs root, slurm-wlm and munge (scripts/install-deps installs them)"
  grep -q 'slurm.conf' "$WORK/slurm.out" || skip "Slurm did not start here: $(tail -3 "$WORK/slurm.out")"
  export SLURM_CONF="$WORK/slurm/slurm.conf"
}

leases() { "$TARMAC_BIN_DIR/tarmac" leases --json --socket "$SOCK"; }

@test "slurmd accepts the gres.conf tarmac writes" {
  run slurmd -f "$SLURM_CONF" -G
  [ "$status" -eq 0 ]
  [[ "$output" != *"error"* ]]
  [[ "$output" != *"WARNING"* ]]
  run sinfo -h -o "%G"
  [[ "$output" == *"gpu:nvidia_h100_80gb_hbm3:8"* ]]
}

@test "a job's GPUs are a slurm lease while it runs, and its epilog ends it" {
  run srun --gres=gpu:2 sh -c "$TARMAC_BIN_DIR/tarmac leases --json --socket $SOCK; echo JOB=\$SLURM_JOB_ID"
  [ "$status" -eq 0 ]
  job=$(echo "$output" | sed -n 's/^JOB=//p')
  [[ "$output" == *"\"kind\": \"slurm\""* ]]
  [[ "$output" == *"\"slurm_job\": \"$job\""* ]]
  for _ in $(seq 100); do grep -q "job $job: 2 GPUs" "$WORK/epilog.log" 2>/dev/null && break; sleep 0.1; done
  grep -q "job $job: 2 GPUs for" "$WORK/epilog.log"
  run leases
  [[ "$output" != *"\"slurm_job\": \"$job\""* ]]
}

@test "the epilog terminates what a job left on its GPU" {
  run srun --gres=gpu:1 sh -c "setsid $TARMAC_BIN_DIR/tarmac-simload --memory 1GiB --util 0 >/dev/null 2>&1 </dev/null & echo LOAD=\$!; echo JOB=\$SLURM_JOB_ID; sleep 2"
  [ "$status" -eq 0 ]
  job=$(echo "$output" | sed -n 's/^JOB=//p')
  load=$(echo "$output" | sed -n 's/^LOAD=//p')
  [[ -n "$load" ]]
  for _ in $(seq 100); do kill -0 "$load" 2>/dev/null || break; sleep 0.1; done
  ! kill -0 "$load" 2>/dev/null
  grep -q "job $job: 1 GPU for .*1 process left on its GPUs terminated" "$WORK/epilog.log"
}

@test "a job that leaves its GPU idle is cancelled through Slurm when the policy says so" {
  start=$(date +%s)
  run timeout 60 srun --gres=gpu:1 sleep 40
  [ "$status" -ne 0 ]
  [ $(( $(date +%s) - start )) -lt 40 ]
  run "$TARMAC_BIN_DIR/tarmac" events --socket "$SOCK"
  [[ "$output" == *"slurm_idle_cancel"* ]]
}


@test "the per-job report holds every job the prologs recorded, as the history does" {
  # Stopped, the agent folds the minute in progress into the history.
  kill "$(cat "$WORK/agent.pid")"
  for _ in $(seq 100); do kill -0 "$(cat "$WORK/agent.pid")" 2>/dev/null || break; sleep 0.05; done
  db="$WORK/state/tarmac.db"
  history=$(sqlite3 "$db" "SELECT DISTINCT 'job ' || name || ' (' || scope || ')' FROM allocations WHERE kind = 'slurm' ORDER BY 1")
  [[ -n "$history" ]]
  run "$TARMAC_BIN_DIR/tarmac" report --by slurm-job --since 1h --format json --db "$db"
  [ "$status" -eq 0 ]
  report=$(echo "$output" | jq -r '.owners[].owner' | sort)
  [ "$report" = "$(echo "$history" | sort)" ]
  echo "$output" | jq -e '.by == "slurm-job" and ([.owners[].gpu_hours_held] | all(. > 0))'
}
