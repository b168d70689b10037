#!/usr/bin/env bats
# MIG end to end, as users meet it: instances under their GPU in status and
# its JSON, nvidia-smi's MIG query fields, a third-party NVML client seeing
# the instances tarmac sees, over the fake libnvidia-ml and the simulated
# mig-lab machine (GPU 0: 7 x 1g.10gb, GPU 1: 3g+2g+1g+1g, GPU 2: 2 x 3g, GPU 3 whole).

load sim_helpers

setup() {
  sim_setup mig-lab.toml
}

mig_uuid() {  # mig_uuid GPU SLOT: the MIG UUID at SLOT of GPU's layout, from tarmac's JSON
  tarmac status --json | python3 -c "import json,sys; print(json.load(sys.stdin)['gpus'][$1]['mig_instances'][$2]['uuid'])"
}

@test "status shows each GPU's MIG instances, their memory and processes" {
  uuid=$(mig_uuid 1 0)
  pid=$(start_load "$uuid" --memory 20GiB --util 60)
  run tarmac status
  [ "$status" -eq 0 ]
  [[ "$output" == *"MIG 3g.40gb   gi 1  ci 0  20.0 / 40.0 GiB"*"$uuid"* ]]
  [[ "$output" == *"$pid"* ]]
  [ "$(grep -c 'MIG 1g.10gb' <<<"$output")" -eq 9 ]
  run tarmac status --json
  [ "$status" -eq 0 ]
  python3 - "$output" "$pid" <<'PY'
import json, sys
s = json.loads(sys.argv[1]); pid = int(sys.argv[2])
g1 = s["gpus"][1]
assert [m["profile"] for m in g1["mig_instances"]] == ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"], g1
assert g1["mig_instances"][0]["pids"] == [pid]
assert g1["mig_instances"][0]["memory_used_bytes"] == 20 << 30
assert "utilization_gpu_ratio" not in g1, "no utilization rates under MIG: absent, never 0"
p = [p for p in g1["processes"] if p["pid"] == pid][0]
assert p["gpu_instance_id"] == 1 and p["compute_instance_id"] == 0
assert "sm_utilization_ratio" not in p
assert "mig_instances" not in s["gpus"][3]
PY
}

@test "query answers nvidia-smi's MIG fields and the processes' instance ids" {
  uuid=$(mig_uuid 0 3)
  pid=$(start_load "$uuid" --memory 2GiB --util 30)
  run tarmac query --query-gpu=index,mig.mode.current,mig.mode.pending --format=csv,noheader
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "0, Enabled, Enabled" ]
  [ "${lines[3]}" = "3, Disabled, Disabled" ]
  run tarmac query --query-compute-apps=pid,gpu_instance_id,compute_instance_id,used_memory --format=csv,noheader
  [ "$status" -eq 0 ]
  [ "$output" = "$pid, 4, 0, 2048 MiB" ]
}

@test "an NVML client written by someone else sees the MIG devices tarmac sees" {
  uuid=$(mig_uuid 1 2)
  pid=$(start_load "$uuid" --memory 3GiB --util 40)
  run env LD_LIBRARY_PATH="$TARMAC_BUILD_DIR/fakenvml" python3 "$TARMAC_SOURCE_DIR/tests/e2e/nvml_client.py"
  [ "$status" -eq 0 ]
  # 4 GPUs, and 7 + 4 + 2 MIG devices.
  [ "$(grep -c '^  ' <<<"$output")" -eq 13 ]
  [[ "$output" == *"  1/3, $uuid, NVIDIA H100 80GB HBM3 MIG 1g.10gb, 10240, 3072, $pid"* ]]
  [[ "$output" == *"1, NVIDIA H100 80GB HBM3, "*", N/A, $pid"* ]]
  expected=$(tarmac status --json | python3 -c "
import json, sys
for g in json.load(sys.stdin)['gpus']:
    for m in g.get('mig_instances', []):
        print(f\"{g['index']}/{m['gpu_instance_id']} {m['uuid']} {m['profile']} {m['memory_total_bytes'] >> 20}\")")
  got=$(grep '^  ' <<<"$output" | sed -E 's/^  ([^,]*), ([^,]*), .* MIG ([^,]*), ([0-9]+), .*/\1 \2 \3 \4/')
  [ "$got" = "$expected" ]
}

@test "a scenario whose MIG layout cannot be on its GPU is refused with its line" {
  printf '[[gpu]]\nmodel = "NVIDIA H100 80GB HBM3"\nmig_layout = ["4g.40gb", "4g.40gb"]\n' > "$WORLD/bad.toml"
  TARMAC_SIM_SCENARIO="$WORLD/bad.toml" run tarmac status
  [ "$status" -ne 0 ]
  [[ "$output" == *"bad.toml:1: key 'gpu[0].mig_layout': at most 1 instance of 4g.40gb fit one GPU"* ]]
}
