#!/usr/bin/env bats
# End-to-end checks of the tarmac CLI as a user runs it, over the fake
# libnvidia-ml and the simulated world.

load sim_helpers

setup() {
  sim_setup lab-8gpu.toml
}

# A private agent on $WORLD/t.sock with its HTTP on a free loopback port;
# prints its /metrics address once it serves.
start_private_agent() {
  tarmac agent --socket "$WORLD/t.sock" --state-dir "$WORLD/state" --log-level info --http-listen 127.0.0.1:0 \
    >/dev/null 2>"$WORLD/agent.log" 3>&- &
  echo "$!" >> "$WORLD/pids"
  for _ in $(seq 200); do grep -q 'http://.*/metrics' "$WORLD/agent.log" 2>/dev/null && break; sleep 0.05; done
  grep -o 'http://[^ ]*/metrics' "$WORLD/agent.log" | head -1
}

@test "help documents the exit codes and every command" {
  run tarmac --help
  [ "$status" -eq 0 ]
  [[ "$output" == *"Exit codes: 0 ok; 1 error"*"2 usage error; 3 no GPU library or driver"* ]]
  [[ "$output" == *"status"* && "$output" == *"query"* && "$output" == *"pick"* ]]
  run tarmac status --help
  [[ "$output" == *"--json"* && "$output" == *"--watch"* ]]
  # Global options before the command, with values that are command names:
  # the command is still the one named after them.
  run tarmac --log-level warning --socket status status --no-agent --json
  [ "$status" -eq 0 ]
  [[ "$output" == *'"gpus"'* ]]
  run tarmac --backend=sim --no-agent query --query-gpu=index --format=csv,noheader
  [ "$status" -eq 0 ]
  [ "${#lines[@]}" -eq 8 ]
}

@test "a usage error exits 2" {
  run tarmac status --no-such-flag
  [ "$status" -eq 2 ]
  run tarmac stauts
  [ "$status" -eq 2 ]
  [[ "$output" == *"did you mean 'status'?"* ]]
}

@test "shell completion names commands, subcommands, options and choices" {
  source <(tarmac completion bash)
  complete_words() { COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _tarmac; echo "${COMPREPLY[*]}"; }
  [ "$(complete_words tarmac sta)" = "status" ]
  [ "$(complete_words tarmac run --max)" = "--max-time" ]
  [ "$(complete_words tarmac backfill su)" = "submit" ]
  [ "$(complete_words tarmac status --color a)" = "auto always" ]
  [ "$(complete_words tarmac run -- ls)" = "" ]  # The command's own words are not tarmac's.
  run tarmac completion zsh
  [[ "$output" == "#compdef tarmac"* ]]
  run tarmac completion fish
  [[ "$output" == *"complete -c tarmac -n '__fish_seen_subcommand_from run' -l max-time"* ]]
  run tarmac completion tcsh
  [ "$status" -eq 2 ]
}

@test "completion completes every command, subcommand and option, tarmac fleet's and top's too" {
  source <(tarmac completion bash)
  complete_words() { COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _tarmac; echo "${COMPREPLY[*]}"; }
  checked=0
  # Every command path the script knows, each of its subcommands and options
  # typed in full after it, must be offered.
  walk() {
    local path=$1 word
    local -a words=(tarmac)
    [ -n "$path" ] && read -ra rest <<<"$path" && words+=("${rest[@]}")
    for word in $(_tarmac_subcommands "$path") $(_tarmac_options "$path"); do
      [[ " $(complete_words "${words[@]}" "$word") " == *" $word "* ]] ||
        { echo "'${words[*]} $word' is not offered"; return 1; }
      checked=$((checked + 1))
    done
    for word in $(_tarmac_subcommands "$path"); do walk "${path:+$path }$word" || return 1; done
  }
  walk ""
  [ "$checked" -gt 300 ]
  [ "$(complete_words tarmac fleet st)" = "status" ]
  offered=" $(complete_words tarmac fleet status --hel) "
  [[ "$offered" == *" --held-idle "* && "$offered" == *" --help "* ]] || { echo "offered: $offered"; false; }
  [ "$(complete_words tarmac fleet report --prom)" = "--prometheus" ]  # The connection options fall through.
  [ "$(complete_words tarmac top --pl)" = "--plain" ]
  [ "$(complete_words tarmac top --color n)" = "never" ]
}

@test "tarmac fleet and tarmac top wrap their help at the terminal's width" {
  # On a terminal 80 columns wide (script(1) gives the command one).
  for command in "fleet --help" "fleet report --help" "top --help"; do
    run script -qec "stty cols 80 rows 24; tarmac $command" /dev/null
    [ "$status" -eq 0 ]
    [[ "$output" == *"Usage: tarmac "* ]]
    [ -z "$(printf '%s\n' "$output" | tr -d '\r' | awk 'length($0) > 80')" ] || { echo "$command: $output"; false; }
  done
}

@test "bare tarmac is tarmac status" {
  run tarmac
  [ "$status" -eq 0 ]
  [[ "$output" == *"8 GPUs via nvml"* ]]
}

@test "an NVML client written by someone else sees the simulated fleet as tarmac does" {
  pid=$(start_load 0 --memory 10GiB --util 100)
  run env LD_LIBRARY_PATH="$TARMAC_BUILD_DIR/fakenvml" python3 "$TARMAC_SOURCE_DIR/tests/e2e/nvml_client.py"
  [ "$status" -eq 0 ]
  [ "${#lines[@]}" -eq 8 ]
  expected=$(tarmac query --query-gpu=index,name,uuid,memory.total --format=csv,noheader,nounits | sed -n 1p)
  [[ "${lines[0]}" == "$expected, "* ]]
  # v1 memory counts the 512 MiB reserve as used, as the driver does.
  re=", 10752, (9[0-9]|100), $pid\$"
  [[ "${lines[0]}" =~ $re ]]
  [[ "${lines[1]}" == *", 512, 0, " ]]
}

@test "query writes nvidia-smi's CSV with and without header and units" {
  run tarmac query --query-gpu=index,utilization.gpu,memory.total,power.limit --format=csv
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = "index, utilization.gpu [%], memory.total [MiB], enforced.power.limit [W]" ]
  [ "${lines[1]}" = "0, 0 %, 81920 MiB, 700.00 W" ]
  run tarmac query --query-gpu=index,memory.total --format=csv,noheader,nounits -i 2,7
  [ "$output" = $'2, 81920\n7, 81920' ]
}

@test "query --query-compute-apps lists processes like nvidia-smi" {
  pid=$(start_load 4 --memory 3GiB --util 50)
  run tarmac query --query-compute-apps=pid,used_memory,gpu_bus_id --format=csv,noheader
  [ "$status" -eq 0 ]
  [ "$output" = "$pid, 3072 MiB, 00000000:9A:00.0" ]
  # Process names come from /proc (a GPU query leaves them out).
  run tarmac query --query-compute-apps=pid,process_name --format=csv,noheader
  [ "$output" = "$pid, $(tr '\0' '\n' < "/proc/$pid/cmdline" | head -n 1)" ]
}

@test "status --watch refreshes until interrupted" {
  run timeout --preserve-status -s INT 3 tarmac status --json --watch 1
  [ "$status" -eq 0 ]
  [ "${#lines[@]}" -ge 2 ]
  [[ "${lines[0]}" == '{"backend":"nvml"'* ]]
}

@test "the status screen marks idle holders and throttling" {
  pid=$(start_load 3 --memory 20GiB --pattern idle)
  run tarmac status --color never
  [ "$status" -eq 0 ]
  [[ "$output" == *"$pid"*"<- holds memory at 0% SM"* ]]
  [[ "$output" == *"THROTTLED (thermal)"* ]]
  [[ "$output" == *"PCIe x8 of x16"* ]]
  for line in "${lines[@]}"; do [ "${#line}" -le 100 ]; done
  run tarmac status --color never --wide
  [[ "$output" == *"THROTTLED (sw_thermal_slowdown,hw_thermal_slowdown)"* ]]
  [[ "$output" == *"1 process holding memory without computing"* ]]
}

@test "status fits a terminal of 80x24, and --watch keeps its header on screen" {
  for gpu in 0 1 3 5 6; do start_load $gpu --memory 20GiB --util $((gpu * 15)) >/dev/null; done
  # script(1) gives the command a terminal of that size.
  run script -qec "stty cols 80 rows 24; tarmac status --color never" /dev/null
  [ "$status" -eq 0 ]
  screen=$(printf '%s\n' "$output" | tr -d '\r')
  [ -z "$(awk 'length($0) > 80' <<<"$screen")" ] || { echo "$screen"; false; }
  [[ "$screen" == *"1980 MHz"* && "$screen" != *"MH..."* ]]
  [ "$(grep -c 'PID  USER' <<<"$screen")" -eq 5 ]  # Every process listed.
  run script -qec "stty cols 80 rows 24; timeout -s INT 3 tarmac status --watch 1 --color never" /dev/null
  # The first screen, after the clear: at most 23 lines, the host line first.
  first=$(printf '%s' "$output" | tr -d '\r' | awk 'BEGIN { RS = "\033\\[H\033\\[2J" } NR == 2 { print; exit }')
  [ "$(printf '%s\n' "$first" | grep -c .)" -le 23 ] || { echo "$first"; false; }
  [[ "$(printf '%s\n' "$first" | head -1)" == *"8 GPUs via"* ]]
  [[ "$first" == *"1 process"* && "$first" == *"of 8 GPUs idle"* ]]
}

@test "CUDA_VISIBLE_DEVICES=\$(tarmac pick) runs a job on the picked GPU" {
  start_load 0 --memory 70GiB --util 90 >/dev/null
  picked=$(tarmac pick --min-free-memory 20GiB)
  pid=$(start_load "$picked" --memory 20GiB --util 50)
  run tarmac query --query-compute-apps=pid,gpu_uuid --format=csv,noheader
  [[ "$output" == *"$pid, $picked"* ]]
  [[ "$picked" != "$(tarmac query --query-gpu=uuid --format=csv,noheader -i 0)" ]]
}

@test "the demo cleans up every process it started" {
  run "$TARMAC_SOURCE_DIR/scripts/demo" "$TARMAC_BUILD_DIR" 1
  [ "$status" -eq 0 ]
  [[ "$output" == *"holds memory at 0% SM"* ]]
  [[ "$output" == *"sampled by a private tarmac agent"* ]]
  [[ "$output" == *"every process it started has ended"* ]]
  # This demo's world (other tests may run a demo of their own meanwhile):
  # no process is left in it, the agent (its socket is in the world) nor a
  # load (its environment names the world).
  world=$(printf '%s\n' "$output" | grep -o 'socket /tmp/tarmac-demo-[^/]*' | head -1 | cut -d' ' -f2)
  [ -n "$world" ]
  # (`! cmd` never fails a bats test: the status is checked explicitly.)
  run pgrep -f -- "$world/"
  [ "$status" -eq 1 ]
  for pid in $(pgrep -f tarmac-simload); do
    if grep -qa -- "$world" "/proc/$pid/environ" 2>/dev/null; then echo "pid $pid is left in $world"; false; fi
  done
}

@test "the README's and the demo's commands work as written" {
  # The metrics example from the README, against a private agent.
  url=$(start_private_agent)
  example=$(grep -o "curl -s localhost:9477/metrics | grep .*" "$TARMAC_SOURCE_DIR/README.md" | head -1)
  [ -n "$example" ]
  for _ in $(seq 100); do curl -sf "$url" | grep -q DCGM_FI_DEV_GPU_UTIL && break; sleep 0.1; done
  run bash -c "${example/localhost:9477\/metrics/$url}"
  [ "$status" -eq 0 ]
  [[ "$output" == *"DCGM_FI_DEV_GPU_UTIL{"* ]]
  [[ "$output" == *"tarmac_gpu_held_idle{"* ]]

  # The demo's "in another shell" line, while it runs, in a shell that has
  # nothing else.
  out="$WORLD/demo-env.out"
  "$TARMAC_SOURCE_DIR/scripts/demo" "$TARMAC_BUILD_DIR" 20 >"$out" 2>&1 3>&- &
  demo=$!
  echo "$demo" >> "$WORLD/pids"
  for _ in $(seq 300); do grep -q "demo: running for" "$out" && break; sleep 0.1; done
  line=$(grep -A1 'in another shell, after:' "$out" | tail -1)
  [[ "$line" == *"source "*"/env.sh" ]]
  run env -i HOME="$HOME" bash --norc -c "$line; command -v tarmac && tarmac --version"
  kill -TERM "$demo"  # (SIGINT is ignored by a background job of a script)
  wait "$demo" || true
  [ "$status" -eq 0 ]
  [[ "$output" == *"$TARMAC_BIN_DIR/tarmac"* ]]
}

@test "an unknown command or option is named; events and history read as a person expects" {
  run tarmac frobnicate
  [ "$status" -eq 2 ]
  [[ "$output" == *"unknown command 'frobnicate'"* ]]
  run tarmac status --frobnicate
  [ "$status" -eq 2 ]
  [[ "$output" == *"--frobnicate"* ]]
  # An agent on a simulated world with no scenario would serve no GPU for
  # ever: refused at start, before it writes anything.
  run env -u TARMAC_SIM_SCENARIO tarmac agent --backend sim --socket "$WORLD/none.sock" \
    --state-dir "$WORLD/none-state" --http-listen off
  [ "$status" -eq 2 ]
  [[ "$output" == *"--backend sim: no scenario: pass --scenario FILE or set TARMAC_SIM_SCENARIO"* ]]
  [ ! -e "$WORLD/none-state" ]

  tarmac agent --socket "$WORLD/t.sock" --state-dir "$WORLD/state" --http-listen off >/dev/null 2>&1 3>&- &
  echo "$!" >> "$WORLD/pids"
  for _ in $(seq 200); do tarmac leases --socket "$WORLD/t.sock" >/dev/null 2>&1 && break; sleep 0.05; done
  run tarmac reserve --socket "$WORLD/t.sock" --gpus 8 --for 1h
  [ "$status" -eq 0 ]
  run tarmac events --socket "$WORLD/t.sock"
  [ "$status" -eq 0 ]
  [[ "${lines[0]}" == *"SEQ"*"TIME"*"LEASE"*"EVENT"*"USER"*"BY"*"DETAIL"* ]]
  # A kind no event has is refused with the nearest one, not "No events match".
  run tarmac events --socket "$WORLD/t.sock" --kind grantd
  [ "$status" -eq 2 ]
  [[ "$output" == *"--kind: 'grantd' is no event kind; did you mean 'granted'?"* ]]
  run tarmac events --socket "$WORLD/t.sock" --kind granted,expired
  [ "$status" -eq 0 ]
  [[ "$output" == *"granted"* ]]
  # Eight GPUs in the GPUS column do not run into the KIND column.
  run tarmac leases --socket "$WORLD/t.sock"
  [[ "$output" == *"0,1,2,3,4,5,6,7  reservation"* ]]
  # Internal error codes stay out of messages.
  run tarmac run --socket "$WORLD/t.sock" --gpus 0 -- true
  [ "$status" -eq 2 ]
  [[ "$output" != *"bad_request"* ]]
  [[ "$output" == *"gpus must be at least 1"* ]]

  sleep 2.5
  run tarmac history --db "$WORLD/state/tarmac.db" --since 1m --step 1s --metric utilization
  [ "$status" -eq 0 ]
  [[ "${lines[1]}" =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}\ [0-9]{2}:[0-9]{2}:[0-9]{2}\ UTC ]]
}

@test "an admin drains a GPU by hand: status, pick, metrics and events show it; undrain puts it back" {
  url=$(start_private_agent)
  for _ in $(seq 200); do tarmac leases --socket "$WORLD/t.sock" >/dev/null 2>&1 && break; sleep 0.05; done
  run tarmac drain 3 --reason "fan rattles" --socket "$WORLD/t.sock"
  [ "$status" -eq 0 ]
  [[ "$output" == "GPU 3 drained: no new lease gets it until tarmac undrain 3" ]]
  run tarmac drain 3 --reason again --socket "$WORLD/t.sock"
  [ "$status" -ne 0 ]
  [[ "$output" == *"GPU 3 is already drained by root since "*": fan rattles"* ]]
  run tarmac drain 9 --reason x --socket "$WORLD/t.sock"
  [ "$status" -ne 0 ]
  [[ "$output" == *"no GPU 9 here"* ]]
  run tarmac status --json --socket "$WORLD/t.sock"
  [ "$(echo "$output" | jq -r '.gpus[3].verdict')" == drain ]
  [ "$(echo "$output" | jq -r '.gpus[3].drained.reason')" == "fan rattles" ]
  [ "$(echo "$output" | jq -r '.gpus[3].verdict_reasons[0]')" == "drained by root: fan rattles" ]
  run tarmac status --socket "$WORLD/t.sock"
  [[ "$output" == *"DRAIN"*"drained by root: fan rattles"* ]]
  run tarmac pick --json --count 8 --socket "$WORLD/t.sock"
  [ "$(echo "$output" | jq -r '.gpus[3].why')" == "to drain: drained by root: fan rattles" ]
  for _ in $(seq 100); do
    curl -s "$url" | grep -q 'tarmac_gpu_health{[^}]*gpu="3"[^}]*verdict="drain"} 1' && break
    sleep 0.1
  done
  curl -s "$url" | grep -q 'tarmac_gpu_health{[^}]*gpu="3"[^}]*verdict="drain"} 1'
  run tarmac events --kind gpu_drained --json --socket "$WORLD/t.sock"
  [ "$(echo "$output" | jq -r '.events[0].actor')" == root ]
  [[ "$(echo "$output" | jq -r '.events[0].detail')" == "GPU 3 (GPU-"*") drained by root: fan rattles" ]]
  # Kept across an agent restart.
  pkill -f -- "--socket $WORLD/t.sock" || true
  for _ in $(seq 100); do pgrep -f -- "--socket $WORLD/t.sock" >/dev/null || break; sleep 0.05; done
  tarmac agent --socket "$WORLD/t.sock" --state-dir "$WORLD/state" --http-listen off >/dev/null 2>&1 3>&- &
  echo "$!" >> "$WORLD/pids"
  for _ in $(seq 200); do tarmac leases --socket "$WORLD/t.sock" >/dev/null 2>&1 && break; sleep 0.05; done
  for _ in $(seq 100); do
    [ "$(tarmac status --json --socket "$WORLD/t.sock" | jq -r '.gpus[3].verdict')" == drain ] && break
    sleep 0.05
  done
  [ "$(tarmac status --json --socket "$WORLD/t.sock" | jq -r '.gpus[3].drained.by')" == root ]
  run tarmac undrain 3 --socket "$WORLD/t.sock"
  [ "$status" -eq 0 ]
  for _ in $(seq 100); do
    [ "$(tarmac status --json --socket "$WORLD/t.sock" | jq -r '.gpus[3].verdict')" == ok ] && break
    sleep 0.05
  done
  [ "$(tarmac status --json --socket "$WORLD/t.sock" | jq -r '.gpus[3].verdict')" == ok ]
}

@test "every command the demo suggests works as written, in a new shell" {
  start_demo 120
  # The suggested commands: the indented lines between that header and the
  # blank line that ends them, without their trailing comments.
  mapfile -t commands < <(sed -n '/^):$/,/^$/p' "$out" | sed -n 's/^  \(tarmac\|curl\)/\1/p' | sed 's/  *# .*$//')
  [ "${#commands[@]}" -ge 8 ]
  for c in "${commands[@]}"; do
    printf '%s\n' "$setup_line" "$c" > "$WORLD/suggested.sh"
    run run_alone 8 "$WORLD/suggested.sh"
    echo "# $c -> $status" >&3
    case "$c" in
      *"--no-wait"*) [[ "$output" == *"75"* ]] ;;                    # It echoes its exit code.
      *"--max-time 1m"*) [[ "$status" -eq 124 || "$status" -eq 0 ]] ;;  # Still running after 8 s.
      *"release 1"*) [ "$status" -eq 0 ] ;;
      *"tarmac doctor"*) [[ "$status" -eq 0 || "$status" -eq 4 || "$status" -eq 5 ]] ;;  # By the worst finding.
      *) [ "$status" -eq 0 ] || { echo "$c: $output"; false; } ;;
    esac
    # What tarmac prints fits 100 columns (Prometheus' own lines are not ours).
    if [[ "$c" != curl* ]]; then
      wide=$(printf '%s\n' "$output" | wider_than_100)
      [ -z "$wide" ] || { echo "wider than 100 columns: $c: $wide"; false; }
    fi
  done
  kill -TERM "$demo"  # (SIGINT is ignored by a background job of a script)
  wait "$demo" || true
}
