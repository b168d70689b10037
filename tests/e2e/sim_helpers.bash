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
