#!/usr/bin/env bats
# The README's tour, walked as a new user walks it: every `tarmac` and
# `curl` command it shows, run as written in a new shell next to the demo's
# agent, must do what the README says and print nothing wider than 100
# columns. Only what cannot
# exist here is swapped: the user's own Python scripts become `sleep 1`,
# Ollama becomes the simulated engine, and files under /etc become files of
# the test's own.

load sim_helpers

setup() {
  sim_setup lab-8gpu.toml
}

# The commands of the README's "A short tour" section: inline `tarmac ...`
# spans and lines of its code blocks, without their trailing comments; not
# `tarmac agent` (a server, which the demo runs) and not a bare command
# name.
tour_commands() {
  python3 - "$TARMAC_SOURCE_DIR/README.md" <<'PY'
import re, sys
text = open(sys.argv[1], encoding="utf-8").read()
start = text.index("## A short tour")
end = text.find("\n## ", start + 5)
tour = text[start:end if end >= 0 else len(text)]
seen = []
def add(c):
    c = re.sub(r"\s+#\s.*$", "", c.strip()).strip()
    if c.startswith("$ "):
        c = c[2:]
    if c.startswith("curl ") and "localhost:9477" in c:
        pass
    elif not c.startswith("tarmac ") or c.startswith("tarmac agent") or c in ("tarmac run",):
        return
    if c not in seen:
        seen.append(c)
for block in re.findall(r"```[a-z]*\n(.*?)```", tour, re.S):
    for line in block.split("\n"):
        add(line)
for span in re.findall(r"`(tarmac [^`]+)`", re.sub(r"```.*?```", "", tour, flags=re.S)):
    add(span)
print("\n".join(seen))
PY
}

# What cannot exist on a test machine, swapped for what can (a Prometheus
# host name: its lookup alone may take the resolver's 5 s timeout).
swap() {
  sed -e 's#python [^ ]*\.py.*$#sleep 1#' \
      -e "s#'ollama serve'#'tarmac-simengine --port {port}'#" \
      -e "s#/etc/tarmac/tarmac.toml#$TARMAC_SOURCE_DIR/examples/config/tarmac.toml#" \
      -e 's#> */etc/slurm/gres.conf#> gres.conf#' \
      -e 's#http://prometheus:9090#http://127.0.0.1:9#'
}

@test "every command of the README's tour works as written and fits 100 columns" {
  mapfile -t commands < <(tour_commands)
  [ "${#commands[@]}" -ge 25 ]
  [ "$(printf '%s\n' "${commands[@]}" | grep -c '^curl ')" -ge 3 ]
  start_demo 150
  # The demo's agent is on 9477, as the README's curl lines say, unless
  # another agent had the port: then its own address stands in.
  address=$(sed -n 's#.*agent.s HTTP is at http://\([^/]*\)/.*#\1#p' "$out")
  [ -n "$address" ] || address=localhost:9477
  tour_start=$SECONDS
  mkdir -p "$WORLD/tour"
  printf '%s\n' '{"id": "q1", "prompt": "Say hi"}' '{"id": "q2", "prompt": "Say bye"}' > "$WORLD/tour/prompts.jsonl"
  for c in "${commands[@]}"; do
    written=$(printf '%s' "$c" | swap | sed -e "s#localhost:9477#$address#")
    printf '%s\n' "$setup_line" "cd '$WORLD/tour'" "$written" > "$WORLD/tour.sh"
    # Commands that run until stopped (a live view, a request that waits)
    # are stopped after 4 s; every other one must end by itself (60 s is a
    # bound for a hang, not a timing: a loaded machine takes its time).
    case "$c" in
      *"run --gpus"* | *"--priority backfill"* | *"--watch"* | *"tarmac top"*) limit=4 ;;
      *) limit=60 ;;
    esac
    run run_alone "$limit" "$WORLD/tour.sh"
    echo "# $written -> $status" >&3
    case "$c" in
      *"run --gpus"*) [[ "$status" -eq 0 || ( "$status" -eq 124 && "$output" == *"queued"* ) ]] ;;  # Waits if it must.
      *"tarmac fleet "*) [ "$status" -eq 69 ]                          # No Prometheus here: named.
                         [[ "$output" == *"prometheus http://"* ]] ;;
      *"--priority backfill"*) [[ "$status" -eq 0 || ( "$status" -eq 124 && "$output" == *"backfill waits for"* ) ]] ;;
      *"--no-wait"*) [[ "$status" -eq 0 || "$status" -eq 75 ]] ;;     # As the README says.
      *"--mig "*) [ "$status" -eq 2 ]                                   # The lab has no MIG.
                  [[ "$output" == *"can never fit"* ]] ;;
      *"--watch"*) [[ "$status" -eq 124 || "$status" -eq 0 ]] ;;     # Until stopped.
      *"tarmac top"*) [[ "$status" -eq 124 && "$output" == *"8 GPUs"* ]] ;;  # Screens until stopped.
      *"zombies --kill --pid"*) [ "$status" -ne 0 ]                   # No such process here.
                                [[ "$output" == *"48122"* ]] ;;
      *"extend 7"*) [[ "$status" -ne 0 && "$output" == *"7"* ]] ;;   # No lease 7 here.
      *"tarmac doctor"*) [[ "$status" -eq 0 || "$status" -eq 4 || "$status" -eq 5 ]] ;;  # By the worst finding.
      *"--by pod"*) [ "$status" -eq 0 ] ;;
      *"/health"*) [[ "$status" -eq 0 && "$output" == "200" ]] ;;
      *"/api/v1/leases"*) [ "$status" -eq 0 ]
                          jq -e 'type == "object" or type == "array"' <<<"$output" >/dev/null ;;
      *"/metrics"*) [ "$status" -eq 0 ]
                    [[ "$output" == *"DCGM_FI_DEV_GPU_UTIL{"* && "$output" == *"tarmac_gpu_held_idle"* ]] ;;
      *) [ "$status" -eq 0 ] || { echo "$written: exit $status: $output"; false; } ;;
    esac
    # Nothing crashed, and nothing tarmac prints for a person is wider than
    # 100 columns (CSV, JSON and what curl fetches are for programs).
    [ "$status" -lt 128 ]
    [[ "$c" =~ --json|--format[=\ ](csv|json|jsonl) || "$c" == curl* ]] && continue
    wide=$(printf '%s\n' "$output" | wider_than_100)
    [ -z "$wide" ] || { echo "wider than 100 columns: $written: $wide"; false; }
  done
  # What the tour wrote, where it said.
  grep -q "<svg class=\"heatmap\"" "$WORLD/tour/fleet.html"
  grep -q "^NodeName=.* Name=gpu Type=.* File=/dev/nvidia0 " "$WORLD/tour/gres.conf"
  # The doctor, once the agent has watched for the 45 s it needs, finds
  # the demo's data-starved job on GPU 1 and calls none of the steady ones
  # (GPUs 0, 5, 6) starved; no cause is said twice.
  while (( SECONDS - tour_start < 50 )); do sleep 1; done
  printf '%s\n' "$setup_line" "tarmac doctor --quick --json" > "$WORLD/doctor.sh"
  run run_alone 20 "$WORLD/doctor.sh"
  echo "$output" > "$WORLD/doctor.json"
  [ "$(jq -c '[.questions[].findings[] | select(.check == "starved") | .gpu]' "$WORLD/doctor.json")" == "[1]" ]
  [ "$(jq '[.questions[].findings[] | [.check, .gpu]] | (length == (unique | length))' "$WORLD/doctor.json")" == true ]
  kill -TERM "$demo"
  wait "$demo" || true
}
