#!/usr/bin/env bats
# The agent as systemd runs it: the unit file is valid and hardened, and the
# agent speaks sd_notify (READY once the first sample is taken, WATCHDOG each
# tick, STOPPING on SIGTERM).

setup() {
  WORK=$(mktemp -d /tmp/tarmac-deploy-XXXXXX)
  export TARMAC_SIM_SCENARIO="$TARMAC_SOURCE_DIR/examples/scenarios/small.toml"
  export TARMAC_SIM_DIR="$WORK/world"
}

teardown() {
  rm -rf "$WORK"
}

@test "the systemd unit verifies and is hardened" {
  command -v systemd-analyze >/dev/null || skip "systemd-analyze is not installed"
  sed "s#/usr/bin/tarmac#$TARMAC_BIN_DIR/tarmac#" "$TARMAC_SOURCE_DIR/deploy/systemd/tarmac.service" > "$WORK/tarmac.service"
  run systemd-analyze verify "$WORK/tarmac.service"
  [ "$status" -eq 0 ]
  grep -q '^Type=notify$' "$WORK/tarmac.service"
  grep -q '^WatchdogSec=' "$WORK/tarmac.service"
  grep -q '^Restart=on-failure$' "$WORK/tarmac.service"
  run systemd-analyze security --offline=yes "$WORK/tarmac.service"
  [[ "$output" == *"Overall exposure level for tarmac.service: "[0-4]"."*" OK"* ]]
}

@test "the agent tells systemd it is ready, pets the watchdog and says when it stops" {
  run python3 "$TARMAC_SOURCE_DIR/tests/e2e/notify_listener.py" "$WORK/notify" 2.5 \
    "$TARMAC_BIN_DIR/tarmac" agent --backend sim --socket "$WORK/t.sock" --state-dir "$WORK/state" --http-listen 127.0.0.1:0 \
    --config "$TARMAC_SOURCE_DIR/examples/config/tarmac.toml"
  [ "$status" -eq 0 ]
  [[ "$output" == *"READY=1"*"WATCHDOG=1"*"STOPPING=1"* ]]
  [[ "${lines[-1]}" == "exit 0" ]]
}

@test "config check accepts the shipped example" {
  run "$TARMAC_BIN_DIR/tarmac" config check "$TARMAC_SOURCE_DIR/examples/config/tarmac.toml"
  [ "$status" -eq 0 ]
  [[ "$output" == *": ok" ]]
}
