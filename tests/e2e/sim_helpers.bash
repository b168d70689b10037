# Shared by the e2e tests that run tarmac over the fake libnvidia-ml and a
# simulated world: `load sim_helpers`, then `sim_setup SCENARIO` in setup().

sim_setup() {  # sim_setup SCENARIO_FILE_NAME (in examples/scenarios)
  WORLD=$(mktemp -d /tmp/tarmac-e2e-XXXXXX)
  export TARMAC_SIM_SCENARIO="$TARMAC_SOURCE_DIR/examples/scenarios/$1"
  export TARMAC_SIM_DIR="$WORLD/world"
  export TARMAC_NVML_LIBRARY="$TARMAC_BUILD_DIR/fakenvml/libnvidia-ml.so.1"
  export PATH="$TARMAC_BIN_DIR:$PATH"
}

teardown() {
  # start_load runs in command substitutions (subshells), so PIDs are kept
  # in a file, not an array.
  if [[ -f "$WORLD/pids" ]]; then
    # SIGTERM first, so that a demo left running by a failed test ends what
    # it started; then SIGKILL what is left.
    while read -r pid; do kill "$pid" 2>/dev/null || true; done < "$WORLD/pids"
    sleep 0.5
    while read -r pid; do kill -9 "$pid" 2>/dev/null || true; done < "$WORLD/pids"
  fi
  rm -rf "$WORLD"
}

start_load() {  # start_load VISIBLE ARGS...
  local visible=$1
  shift
  # Close bats' fd 3 too, or the test runner waits for the load to end.
  CUDA_VISIBLE_DEVICES=$visible tarmac-simload "$@" >/dev/null 2>&1 3>&- &
  local pid=$!
  echo "$pid" >> "$WORLD/pids"
  for _ in $(seq 200); do
    ls "$TARMAC_SIM_DIR/loads/$pid-"*.json >/dev/null 2>&1 && break
    sleep 0.02
  done
  echo "$pid"
}

# The lines of stdin wider than 100 columns (characters, not bytes).
wider_than_100() {
  python3 -c 'import sys; print("\n".join(l for l in sys.stdin.read().split("\n") if len(l) > 100))'
}

# run_alone SECONDS SCRIPT: runs SCRIPT in a new shell with an empty
# environment, in a session of its own; what still runs after SECONDS gets
# SIGTERM (then SIGKILL), all of it, and the status is 124.
run_alone() {
  setsid env -i HOME="$HOME" bash --norc "$2" </dev/null 2>&1 3>&- &
  local p=$!
  for _ in $(seq $(( $1 * 10 ))); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$p" 2>/dev/null; then
    kill -TERM -- "-$p" 2>/dev/null
    sleep 1
    kill -KILL -- "-$p" 2>/dev/null || true
    wait "$p" || true
    return 124
  fi
  wait "$p"
}

# start_demo SECONDS: the demo in the background for SECONDS, once it runs:
# $demo its PID, $out its output, $setup_line its "in another shell" line.
start_demo() {
  out="$WORLD/demo.out"
  "$TARMAC_SOURCE_DIR/scripts/demo" "$TARMAC_BUILD_DIR" "$1" >"$out" 2>&1 3>&- &
  demo=$!
  echo "$demo" >> "$WORLD/pids"
  for _ in $(seq 300); do grep -q "demo: running for" "$out" && break; sleep 0.1; done
  grep -q "demo: running for" "$out"
  setup_line=$(grep -A1 'in another shell, after:' "$out" | tail -1)
}
