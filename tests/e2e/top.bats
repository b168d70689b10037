#!/usr/bin/env bats
# `tarmac top` in a real terminal (tmux) on the simulated lab, through the
# agent: what a user sees at 80x24 and 200x50, and what the keys do: sort,
# filter, select and signal a tarmac-simload (only that one ends), the
# details, the help, a stopped agent shown as stale, and q.

load sim_helpers

setup() {
  sim_setup lab-8gpu.toml
  SOCK="$WORLD/t.sock"
  tarmac agent --socket "$SOCK" --state-dir "$WORLD/state" --http-listen off >/dev/null 2>"$WORLD/agent.log" 3>&- &
  AGENT=$!
  echo "$AGENT" >> "$WORLD/pids"
  for _ in $(seq 100); do [[ -S "$SOCK" ]] && break; sleep 0.05; done
  SESSION="tarmac-top-$$-$RANDOM"
  export TMUX_TMPDIR="$WORLD"  # A tmux server of this test's own.
}

# The tmux server goes too, whether the test passed or not.
eval "$(declare -f teardown | sed 's/^teardown/sim_teardown/')"
teardown() {
  tmux kill-server 2>/dev/null || true
  sim_teardown
}

# start_top COLUMNS ROWS: tarmac top in a detached tmux session that size.
start_top() {
  tmux new-session -d -s "$SESSION" -x "$1" -y "$2" \
    "env LANG=C.UTF-8 LC_ALL=C.UTF-8 TERM=xterm-256color PATH='$PATH' TARMAC_NVML_LIBRARY='$TARMAC_NVML_LIBRARY' tarmac --socket '$SOCK' top; sleep 30" 3>&-
}

screen() { tmux capture-pane -p -t "$SESSION"; }

# wait_screen TEXT: until the screen shows TEXT (a readiness wait, bounded).
wait_screen() {
  for _ in $(seq 100); do screen | grep -qF -- "$1" && return 0; sleep 0.1; done
  echo "never shown: $1"; screen; return 1
}

@test "top at 80x24: every GPU, the processes, sort, filter, select and SIGTERM the selected load only" {
  big=$(start_load 3 --memory 6GiB --util 30)
  small=$(start_load 5 --memory 2GiB --util 10)
  start_top 80 24
  wait_screen "8 GPUs"
  wait_screen "$small"
  out=$(screen)
  for i in 0 1 2 3 4 5 6 7; do echo "$out" | grep -qE "^ $i H100 80GB"; done
  # Nothing wider than the terminal.
  [ -z "$(echo "$out" | python3 -c 'import sys; print("\n".join(l for l in sys.stdin.read().split("\n") if len(l) > 80))')" ]
  # Biggest GPU memory first: the 6 GiB load, then the 2 GiB one.
  [[ $(echo "$out" | grep -n "$big " | cut -d: -f1) -lt $(echo "$out" | grep -n "$small " | cut -d: -f1) ]]
  echo "$out" | grep -q "GMEMv"
  # s: the next column (SM%), biggest first.
  tmux send-keys -t "$SESSION" s
  wait_screen "SM%v"
  # / filters; Enter keeps it.
  tmux send-keys -t "$SESSION" / 2GiB Enter
  tmux send-keys -t "$SESSION" Escape
  tmux send-keys -t "$SESSION" / "$small" Enter
  wait_screen "[filter: $small]"
  ! screen | grep -q " $big "
  tmux send-keys -t "$SESSION" Escape
  wait_screen " $big "
  # Back to GPU memory order; Down selects the second row (the small load);
  # k asks, y sends SIGTERM to it and to nothing else.
  tmux send-keys -t "$SESSION" r
  tmux send-keys -t "$SESSION" Home
  tmux send-keys -t "$SESSION" k
  wait_screen "Send SIGTERM to PID"
  first=$(screen | grep -o "Send SIGTERM to PID [0-9]*" | grep -o "[0-9]*$")
  tmux send-keys -t "$SESSION" n
  wait_screen "cancelled"
  kill -0 "$first"
  [[ "$first" == "$small" || "$first" == "$big" ]]
  other=$([[ "$first" == "$small" ]] && echo "$big" || echo "$small")
  tmux send-keys -t "$SESSION" Down k
  wait_screen "Send SIGTERM to PID $other"
  tmux send-keys -t "$SESSION" y
  wait_screen "SIGTERM sent to PID $other"
  for _ in $(seq 100); do kill -0 "$other" 2>/dev/null || break; sleep 0.05; done
  ! kill -0 "$other" 2>/dev/null
  kill -0 "$first"
  # The help, then q.
  tmux send-keys -t "$SESSION" '?'
  wait_screen "tarmac top: keys"
  tmux send-keys -t "$SESSION" Escape q
  for _ in $(seq 50); do pgrep -f "tarmac-top --socket $SOCK" >/dev/null || break; sleep 0.1; done
  ! pgrep -f "tarmac-top --socket $SOCK"
}

@test "top at 200x50: host memory, whole commands, the history graph; e shows a process's GPU variables" {
  load=$(start_load 2 --memory 4GiB --util 60)
  start_top 200 50
  wait_screen "$load"
  out=$(screen)
  echo "$out" | grep -q "HMEM"
  echo "$out" | grep -q "COMMAND"
  echo "$out" | grep -q "tarmac-simload --memory 4GiB --util 60"
  # GPU 2's graph: the agent's readings of the load (60 %).
  for _ in $(seq 50); do screen | grep -E "^ 2 H100" | grep -q "▅" && break; sleep 0.1; done
  screen | grep -E "^ 2 H100" | grep -q "▅" || { screen; false; }
  tmux send-keys -t "$SESSION" e
  wait_screen "GPU variables in its environment"
  wait_screen "CUDA_VISIBLE_DEVICES=2"
  ! screen | grep -q TARMAC_LEASE_TOKEN
}

@test "top says the data is stale while the agent is stopped, and recovers" {
  start_top 100 30
  wait_screen "8 GPUs"
  kill -STOP "$AGENT"
  wait_screen "STALE"
  # The keys still answer while the agent does not.
  tmux send-keys -t "$SESSION" '?'
  wait_screen "tarmac top: keys"
  tmux send-keys -t "$SESSION" Escape
  kill -CONT "$AGENT"
  for _ in $(seq 100); do screen | grep -q STALE || break; sleep 0.1; done
  ! screen | grep -q STALE
}

@test "top --plain prints screens as text, and refuses bad options" {
  start_load 1 --memory 1GiB --util 20 >/dev/null
  run tarmac --socket "$SOCK" top --plain --frames 2 --color never
  [ "$status" -eq 0 ]
  [ "$(echo "$output" | grep -c '^tarmac top · ')" -eq 2 ]
  echo "$output" | grep -q "tarmac-simload"
  # With no agent: the GPUs read directly, said in the header.
  run tarmac top --no-agent --backend nvml --plain --frames 1
  [ "$status" -eq 0 ]
  [[ "${lines[0]}" == *"8 GPUs"*"NVML directly"* ]]
  echo "$output" | grep -q "tarmac-simload"
  run tarmac top --interval 0
  [ "$status" -eq 2 ]
  run tarmac top --backend nonsense
  [ "$status" -eq 2 ]
}
