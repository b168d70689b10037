#!/usr/bin/env bats
# `tarmac fleet status` against a real Prometheus (the Debian package)
# scraping three agents on different simulated machines: what it shows of
# each node is what that node's own `tarmac status --json` says, `fleet
# pick` picks what that node's own `pick` would, a stopped agent shows as
# down, and the filters, JSON and exit codes hold; a faults world's lost
# GPU and throttling show as the node says; and one node's fleet report
# equals its own report within 1 %. With FLEET_STORE=victoria-metrics the
# store is VictoriaMetrics (Debian's package) scraping the agents itself,
# with the same scrape config (e2e.fleet_victoria).

load sim_helpers

setup() {
  sim_setup lab-8gpu.toml
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# start_node NAME SCENARIO [PORT]: an agent of its own (world, socket, state,
# HTTP port, host label, and the config lines in NODE_TOML); prints its
# HTTP port.
start_node() {
  local name=$1 dir="$WORLD/$1"
  mkdir -p "$dir"
  printf '[sampler]\nfast_interval = "200ms"\n[http]\nhostname = "%s"\n[doctor]\nenabled = false\n%s\n' "$name" \
    "${NODE_TOML:-}" > "$dir/agent.toml"
  TARMAC_SIM_SCENARIO="$TARMAC_SOURCE_DIR/examples/scenarios/$2" TARMAC_SIM_DIR="$dir/world" \
    tarmac agent --backend nvml --config "$dir/agent.toml" --socket "$dir/t.sock" --state-dir "$dir/state" \
    --http-listen "127.0.0.1:${3:-0}" >/dev/null 2>"$dir/agent.log" 3>&- &
  echo "$!" > "$dir/pid"
  echo "$!" >> "$WORLD/pids"
  for _ in $(seq 200); do grep -q 'http://127.0.0.1:[0-9]*/metrics' "$dir/agent.log" 2>/dev/null && break; sleep 0.05; done
  grep -o 'http://127.0.0.1:[0-9]*/metrics' "$dir/agent.log" | head -1 | sed 's#.*:\([0-9]*\)/metrics#\1#'
}

# A query's answer from this Prometheus (curl, not tarmac: an independent
# reading).
prom_query() {
  curl -sf "http://127.0.0.1:$PROM_PORT/api/v1/query" --data-urlencode "query=$1"
}

# start_prometheus INTERVAL PORT...: a Prometheus of its own (PROM_PORT)
# scraping 127.0.0.1:PORT of each node every INTERVAL; returns once it has a
# scrape target for each (up or not yet).
start_prometheus() {
  local interval=$1 targets="" port
  shift
  for port in "$@"; do targets+="${targets:+, }'127.0.0.1:$port'"; done
  PROM_PORT=$(free_port)
  printf 'global:\n  scrape_interval: %s\n  scrape_timeout: %s\nscrape_configs:\n  - job_name: tarmac\n    static_configs:\n      - targets: [%s]\n' \
    "$interval" "$interval" "$targets" > "$WORLD/prometheus.yml"
  if [[ ${FLEET_STORE:-prometheus} == victoria-metrics ]]; then
    # The same scrape config, read by VictoriaMetrics' own scraper. It
    # hides its newest 30 s from queries by default; here 1 s, so the test
    # does not wait (docs/fleet.md#victoriametrics).
    victoria-metrics -promscrape.config="$WORLD/prometheus.yml" -storageDataPath="$WORLD/vmdata" \
      -httpListenAddr="127.0.0.1:$PROM_PORT" -search.latencyOffset=1s -loggerLevel=WARN \
      >/dev/null 2>"$WORLD/prometheus.log" 3>&- &
  else
    prometheus --config.file="$WORLD/prometheus.yml" --storage.tsdb.path="$WORLD/tsdb" \
      --web.listen-address="127.0.0.1:$PROM_PORT" --log.level=warn >/dev/null 2>"$WORLD/prometheus.log" 3>&- &
  fi
  echo "$!" >> "$WORLD/pids"
  for _ in $(seq 300); do
    [[ $(prom_query 'count(up)' | jq -r '.data.result[0].value[1] // 0') == "$#" ]] && return 0
    sleep 0.1
  done
}

@test "fleet status shows every node as its own status does, and a stopped one as down" {
  port_a=$(start_node node-a lab-8gpu.toml)
  port_b=$(start_node node-b mig-lab.toml)
  port_c=$(start_node node-c small.toml)
  [ -n "$port_a" ] && [ -n "$port_b" ] && [ -n "$port_c" ]
  # A job on node-a holding 3 GiB at 0 % SM: a held-idle GPU.
  CUDA_VISIBLE_DEVICES=2 TARMAC_SIM_SCENARIO="$TARMAC_SOURCE_DIR/examples/scenarios/lab-8gpu.toml" \
    TARMAC_SIM_DIR="$WORLD/node-a/world" tarmac-simload --memory 3GiB --util 0 >/dev/null 2>&1 3>&- &
  echo "$!" >> "$WORLD/pids"
  # A lease on node-a: the fleet shows who holds its GPU.
  TARMAC_SIM_DIR="$WORLD/node-a/world" tarmac reserve --socket "$WORLD/node-a/t.sock" --gpus 1 --for 1h >/dev/null

  start_prometheus 1s "$port_a" "$port_b" "$port_c"
  for _ in $(seq 300); do
    [[ $(prom_query 'count(up == 1)' | jq -r '.data.result[0].value[1] // 0') == 3 ]] &&
      [[ $(prom_query 'count(tarmac_gpu_lease)' | jq -r '.data.result[0].value[1] // 0') == 1 ]] &&
      [[ $(prom_query 'sum(tarmac_gpu_held_idle)' | jq -r '.data.result[0].value[1] // 0') == 1 ]] && break
    sleep 0.1
  done
  export TARMAC_PROMETHEUS_URL="http://127.0.0.1:$PROM_PORT"

  run tarmac fleet status --json
  [ "$status" -eq 0 ]
  echo "$output" > "$WORLD/fleet.json"
  [ "$(jq '.nodes | length' "$WORLD/fleet.json")" -eq 3 ]
  [ "$(jq '.totals.nodes_down' "$WORLD/fleet.json")" -eq 0 ]
  for node in node-a node-b node-c; do
    TARMAC_SIM_DIR="$WORLD/$node/world" tarmac status --json --socket "$WORLD/$node/t.sock" > "$WORLD/$node.json"
    # The same GPUs, in the same order, of the same model and memory.
    [ "$(jq -c '[.gpus[] | [.index, .uuid, .name, .memory_total_bytes]]' "$WORLD/$node.json")" == \
      "$(jq -c --arg n "$node" '.nodes[] | select(.name == $n) | [.gpus[] | [.index, .uuid, .model, .memory_total_bytes]]' "$WORLD/fleet.json")" ]
    [ "$(jq -r --arg n "$node" '.nodes[] | select(.name == $n) | .up' "$WORLD/fleet.json")" == true ]
  done
  # Memory used as the node says (the simulated jobs hold fixed amounts).
  [ "$(jq -c '[.gpus[] | .memory_used_bytes]' "$WORLD/node-a.json")" == \
    "$(jq -c '.nodes[] | select(.name == "node-a") | [.gpus[] | .memory_used_bytes]' "$WORLD/fleet.json")" ]
  [ "$(jq '.nodes[] | select(.name == "node-a") | .gpus[2].memory_used_bytes' "$WORLD/fleet.json")" -ge $((3 << 30)) ]
  # The held-idle GPU and its holder process, counted.
  [ "$(jq -c '[.totals.gpus_held_idle, .totals.idle_holders]' "$WORLD/fleet.json")" == "[1,1]" ]
  [ "$(jq '.nodes[] | select(.name == "node-a") | .gpus[2].held_idle' "$WORLD/fleet.json")" == true ]
  # The lease, with its holder.
  [ "$(jq -r '[.nodes[].gpus[].holders[]] | length' "$WORLD/fleet.json")" -eq 1 ]
  [ "$(jq -r '[.nodes[].gpus[].holders[]][0].kind' "$WORLD/fleet.json")" == reservation ]
  [ "$(jq -r '.totals.gpus' "$WORLD/fleet.json")" -eq "$(cat "$WORLD"/node-*.json | jq -s '[.[].gpus | length] | add')" ]

  # The text: one block per node, the totals line, within 100 columns.
  run tarmac fleet status
  [ "$status" -eq 0 ]
  [[ "${lines[1]}" == *"of "*" GPUs idle"* ]]
  [[ "$output" == *"node-a  8 GPUs"* ]]
  [[ "$output" == *"lease 1 ("* ]]
  [ -z "$(printf '%s\n' "$output" | wider_than_100)" ]

  # By node: each node's GPUs as its agent counts them, as many as listing
  # them counts (idle, held idle and its holder, leased, lost, the mean
  # utilization), read back to back until a scrape does not fall between.
  per_gpu='[.nodes[] | [.name, (.gpus | length), ([.gpus[] | select(.idle)] | length),
    ([.gpus[] | select(.held_idle)] | length), ([.gpus[] | select(.held_idle) | .idle_holders] | add // 0),
    ([.gpus[] | select(.holders | length > 0)] | length), ([.gpus[] | select(.lost)] | length),
    ([.gpus[] | .utilization_ratio] | add / length * 1e6 | round)]]'
  per_node='[.nodes[] | [.name, .gpus, .idle, .held_idle, .idle_holders, .leased, .lost,
    (.utilization_ratio * 1e6 | round)]]'
  for _ in $(seq 20); do
    tarmac fleet status --json | jq -c "$per_gpu" > "$WORLD/listed"
    tarmac fleet status --by node --json > "$WORLD/nodes.json"
    jq -c "$per_node" "$WORLD/nodes.json" > "$WORLD/counted"
    tarmac fleet status --json | jq -c "$per_gpu" > "$WORLD/listed-after"
    cmp -s "$WORLD/listed" "$WORLD/listed-after" && break
  done
  [ "$(cat "$WORLD/counted")" == "$(cat "$WORLD/listed")" ]
  [ "$(jq -c '[.nodes[] | .held_idle]' "$WORLD/nodes.json")" == '[1,0,0]' ]
  [ "$(jq -c '[.totals.gpus, .totals.gpus_held_idle, .totals.idle_holders, .totals.gpus_leased]' "$WORLD/nodes.json")" == \
    "$(jq -c '[.totals.gpus, .totals.gpus_held_idle, .totals.idle_holders, .totals.gpus_leased]' "$WORLD/fleet.json")" ]
  run tarmac fleet status --by node
  [ "$status" -eq 0 ]
  [[ "${lines[1]}" == *"of 14 GPUs idle"* ]]
  [[ "$output" == *"NODE     GPUS   IDLE  HELD IDLE  LEASED   UTIL  NOTES"* ]]
  [[ "$output" == *$'\nnode-a      8 '*"1 idle holder"* ]]
  [ -z "$(printf '%s\n' "$output" | wider_than_100)" ]

  # Filters.
  run tarmac fleet status --json --node 'node-[ab]'
  [ "$(echo "$output" | jq -c '[.nodes[].name]')" == '["node-a","node-b"]' ]
  run tarmac fleet status --json --held-idle
  [ "$(echo "$output" | jq -c '[.nodes[] | [.name, [.gpus[].index]]]')" == '[["node-a",[2]]]' ]
  run tarmac fleet status --json --idle
  [ "$(echo "$output" | jq '[.nodes[].gpus[] | select(.idle | not)] | length')" -eq 0 ]
  [ "$(echo "$output" | jq '[.nodes[].gpus[]] | length')" -eq "$(jq '.totals.gpus_idle' "$WORLD/fleet.json")" ]
  run tarmac fleet status --json --model t4
  [ "$(echo "$output" | jq '[.nodes[].gpus[] | select(.model | test("T4") | not)] | length')" -eq 0 ]

  # pick: the node that fits two GPUs with none to spare, and the GPUs that
  # node's own `tarmac pick` gives.
  run tarmac fleet pick --count 2 --json
  [ "$status" -eq 0 ]
  node=$(echo "$output" | jq -r .node)
  [ "$node" == node-c ]
  [ "$(echo "$output" | jq -r .is_lease)" == false ]
  picked=$(echo "$output" | jq -r '[.gpus[].uuid] | join(",")')
  run env TARMAC_SIM_DIR="$WORLD/$node/world" tarmac pick --count 2 --socket "$WORLD/$node/t.sock"
  [ "$status" -eq 0 ]
  [ "$output" == "$picked" ]
  run tarmac fleet pick --count 2
  [ "$output" == "node-c $picked" ]
  run tarmac fleet pick --count 9
  [ "$status" -eq 1 ]
  [[ "$output" == *"no node has 9 free GPUs now; the most: node-a with 6"* ]]

  # idle names its GPUs by their spells: the very GPUs the marks name idle
  # or held idle in the listing.
  # shellcheck disable=SC2016 # jq's own variable.
  marked='[.nodes[] | .name as $n | .gpus[] | select(.idle or .held_idle) | [$n, .index]] | sort'
  for _ in $(seq 20); do
    tarmac fleet status --json | jq -c "$marked" > "$WORLD/marked"
    tarmac fleet idle --json | jq -c '[.gpus[] | [.node, .index]] | sort' > "$WORLD/spelled"
    tarmac fleet status --json | jq -c "$marked" > "$WORLD/marked-after"
    cmp -s "$WORLD/marked" "$WORLD/marked-after" && break
  done
  [ "$(jq length "$WORLD/spelled")" -gt 1 ]
  [ "$(cat "$WORLD/spelled")" == "$(cat "$WORLD/marked")" ]

  # idle: the held-idle GPU with its holder process, every row idle or held
  # idle now, costliest and longest first.
  run tarmac fleet idle --json
  [ "$status" -eq 0 ]
  [ "$(echo "$output" | jq '[.gpus[] | select((.idle or .held_idle) | not)] | length')" -eq 0 ]
  [ "$(echo "$output" | jq -c '[.gpus[] | select(.held_idle) | [.node, .index, .processes]]')" == '[["node-a",2,1]]' ]
  [ "$(echo "$output" | jq '[.gpus[] | .idle_for_cost // 0] | . == (sort | reverse)')" == true ]
  run tarmac fleet idle --node node-a
  [ "$status" -eq 0 ]
  [[ "${lines[0]}" == *"GPUs idle now (1 held idle)"* ]]
  [[ "$output" == *"1 process, 3.0 GiB"* ]]
  [[ "$output" == *"lease 1 ("* ]]
  [ -z "$(printf '%s\n' "$output" | wider_than_100)" ]

  # A Slurm job on node-a's GPU 5 (its prolog's lease).
  SLURM_JOB_ID=4242 SLURM_JOB_UID=$(id -u) SLURM_JOB_USER=$(id -un) SLURM_JOB_GPUS=5 TARMAC_SIM_DIR="$WORLD/node-a/world" \
    tarmac slurm prolog --socket "$WORLD/node-a/t.sock" >/dev/null

  # report: exact counters by node, model and lease user (increase() needs
  # two scrapes of every node in the range).
  for _ in $(seq 300); do
    [[ $(prom_query 'count(count_over_time(tarmac_gpu_state_seconds_total[1h]) >= 3)' |
      jq -r '.data.result[0].value[1] // 0') == 56 ]] &&
      [[ $(prom_query 'count(count_over_time(tarmac_gpu_job_seconds_total[1h]) >= 3)' |
        jq -r '.data.result[0].value[1] // 0') -ge 1 ]] && break
    sleep 0.1
  done
  run tarmac fleet report --since 1h --json
  [ "$status" -eq 0 ]
  [ "$(echo "$output" | jq -c '[.rows[].key] | sort')" == '["node-a","node-b","node-c"]' ]
  [ "$(echo "$output" | jq '.total.gpus')" -eq 14 ]
  [ "$(echo "$output" | jq '.rows[] | select(.key == "node-a") | .held_idle_hours > 0')" == true ]
  [ "$(echo "$output" | jq '.rows[] | select(.key == "node-a") | .lease_hours.reservation > 0')" == true ]
  [ "$(echo "$output" | jq '.rows[] | select(.key == "node-c") | .held_idle_hours')" == 0 ]
  # By user: the GPUs charged to this user, the reservation's and the Slurm
  # job's (idle in a lease) and the one its job held idle outside leases.
  run tarmac fleet report --since 1h --by user --json
  [ "$(echo "$output" | jq -c '[.rows[] | [.key, .gpus]]')" == "[[\"$(id -un)\",3]]" ]
  [ "$(echo "$output" | jq '.rows[0] | .held_idle_by_lease_hours > 0 and .held_idle_by_process_hours > 0')" == true ]
  [ "$(echo "$output" | jq -c '.rows[0].lease_hours | keys')" == '["reservation","slurm"]' ]
  # By Slurm job: the job, its one GPU, the hours it held it (idle: no
  # process ran); no pod held any.
  run tarmac fleet report --since 1h --by slurm-job --json
  [ "$status" -eq 0 ]
  [ "$(echo "$output" | jq -c '[.rows[] | [.key, .gpus, .lease_hours.slurm > 0, .idle_hours > 0, .busy_hours]]')" == \
    '[["4242",1,true,true,0]]' ]
  run tarmac fleet report --since 1h --by slurm-job
  [[ "$output" == *"SLURM JOB"*$'\n4242 '* ]]
  run tarmac fleet report --since 1h --by pod
  [[ "$output" == *"(no pod held a GPU in this range)"* ]]
  run tarmac fleet report --since 1h --by model --csv
  [[ "${lines[0]}" == "model,gpus,busy_hours,"* ]]
  [[ "$output" == *$'\nTesla T4,1,'* ]]
  run tarmac fleet report --since 1h
  [[ "$output" == *"of 14 GPUs were idle more than 80 % of the time"* ]]
  [ -z "$(printf '%s\n' "$output" | wider_than_100)" ]
  # The HTML form: a node x hour heatmap of every node, as a browser reads it.
  run tarmac fleet report --since 1h --html --out "$WORLD/fleet.html"
  [ "$status" -eq 0 ]
  chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
    --disable-component-update --disable-sync --user-data-dir="$WORLD/chromium" --dump-dom "file://$WORLD/fleet.html" \
    2>/dev/null > "$WORLD/fleet.dom"
  for node in node-a node-b node-c; do grep -q ">$node</text>" "$WORLD/fleet.dom"; done
  [ "$(grep -c '<rect class="hour"' "$WORLD/fleet.dom")" -ge 3 ]
  grep -q '<g class="legend"' "$WORLD/fleet.dom"
  run tarmac fleet report --since tomorrow
  [ "$status" -eq 2 ]

  # node-c's agent stops: down within a few scrapes, with since when.
  kill -TERM "$(cat "$WORLD/node-c/pid")"
  for _ in $(seq 100); do
    tarmac fleet status --json | jq -e '.totals.nodes_down == 1' >/dev/null && break
    sleep 0.1
  done
  run tarmac fleet status --json
  [ "$(echo "$output" | jq -r '.nodes[] | select(.name == "node-c") | .up')" == false ]
  [ "$(echo "$output" | jq -r '.nodes[] | select(.name == "node-c") | .last_seen_unix > 0')" == true ]
  run tarmac fleet status
  [[ "$output" == *"node-c  "*"DOWN since"* ]]
  [[ "$output" == *"1 node down"* ]]
  run tarmac fleet status --by node --json
  [ "$(echo "$output" | jq -c '.nodes[] | select(.name == "node-c") | [.up, .gpus, .last_seen_unix > 0, has("idle")]')" == \
    "[false,$(jq '.gpus | length' "$WORLD/node-c.json"),true,false]" ]
  run tarmac fleet status --by node
  [[ "$output" == *$'\nnode-c '*"DOWN since"* ]]
}

@test "fleet status: bad input and an unreachable Prometheus get their own exit codes" {
  run tarmac fleet status --prometheus http://127.0.0.1:1
  [ "$status" -eq 69 ]
  [[ "$output" == *"http://127.0.0.1:1"* ]]
  run tarmac fleet status --prometheus ftp://x
  [ "$status" -eq 2 ]
  [[ "$output" == *"--prometheus 'ftp://x'"* ]]
  run tarmac fleet status --node '('
  [ "$status" -eq 2 ]
  [[ "$output" == *"--node '('"* ]]
  run tarmac fleet status --bearer-token-file "$WORLD/none"
  [ "$status" -eq 2 ]
  [[ "$output" == *"--bearer-token-file $WORLD/none"* ]]
  run tarmac fleet frobnicate
  [ "$status" -eq 2 ]
  # --by node counts GPUs; the filters that pick GPUs do not go with it.
  run tarmac fleet status --by node --idle --prometheus http://127.0.0.1:1
  [ "$status" -eq 2 ]
  [[ "$output" == *"--by node counts each node's GPUs; --model, --idle and --held-idle pick GPUs"* ]]
  run tarmac fleet status --by host
  [ "$status" -eq 2 ]
  [[ "$output" == *"--by"* ]]
  # [fleet] in the config file names Prometheus; the environment and the
  # flag win over it; a bad value is refused with its line.
  printf '[fleet]\nprometheus_url = "http://127.0.0.1:2"\ntimeout = "2s"\n' > "$WORLD/fleet.toml"
  run env -u TARMAC_PROMETHEUS_URL tarmac fleet status --config "$WORLD/fleet.toml"
  [ "$status" -eq 69 ]
  [[ "$output" == *"http://127.0.0.1:2:"* ]]
  run env TARMAC_PROMETHEUS_URL=http://127.0.0.1:3 tarmac fleet status --config "$WORLD/fleet.toml"
  [[ "$output" == *"http://127.0.0.1:3:"* ]]
  run tarmac fleet status --config "$WORLD/fleet.toml" --prometheus http://127.0.0.1:4
  [[ "$output" == *"http://127.0.0.1:4:"* ]]
  printf '[fleet]\nprometheus_url = "ftp://x"\n' > "$WORLD/bad.toml"
  run tarmac fleet status --config "$WORLD/bad.toml"
  [ "$status" -eq 2 ]
  [[ "$output" == *"bad.toml:2: key 'fleet.prometheus_url'"* ]]
}

@test "fleet report of one node equals that node's own report within 1 %, in all and by user" {
  # Prometheus first, scraping the node's port before the node is up, so
  # that it reads the node's counters from their first second.
  port=$(free_port)
  start_prometheus 100ms "$port"
  NODE_TOML=$'[report]\ngpu_hour_cost = 3.6\ncurrency = "EUR"' start_node solo small.toml "$port" > "$WORLD/port"
  [ "$(cat "$WORLD/port")" == "$port" ]
  for _ in $(seq 300); do [[ $(prom_query 'sum(up)' | jq -r '.data.result[0].value[1] // 0') == 1 ]] && break; sleep 0.1; done
  # Then for twenty seconds GPU 0 busy; GPU 1 held idle by a job at 0 % SM
  # for eight, then reserved and left idle: the user is charged busy
  # time, idle time held by a process, and idle time held by a lease.
  # Prometheus reads every spell from its first second to its last.
  for spec in "0 --util 80 --memory 2GiB --seconds 20" "1 --util 0 --memory 1GiB --seconds 8"; do
    read -r gpu load <<< "$spec"
    # shellcheck disable=SC2086
    CUDA_VISIBLE_DEVICES=$gpu TARMAC_SIM_SCENARIO="$TARMAC_SOURCE_DIR/examples/scenarios/small.toml" \
      TARMAC_SIM_DIR="$WORLD/solo/world" tarmac-simload $load >/dev/null 2>&1 3>&- &
    echo "$!" >> "$WORLD/loads"
  done
  idle_job=$(tail -1 "$WORLD/loads")
  while kill -0 "$idle_job" 2>/dev/null; do sleep 0.2; done
  TARMAC_SIM_DIR="$WORLD/solo/world" tarmac reserve --socket "$WORLD/solo/t.sock" --gpus 1 --for 10s >/dev/null
  while read -r pid; do while kill -0 "$pid" 2>/dev/null; do sleep 0.2; done; done < "$WORLD/loads"
  # Three more scrapes, then the agent stops and the range ends.
  sleep 3
  kill -TERM "$(cat "$WORLD/solo/pid")"
  while kill -0 "$(cat "$WORLD/solo/pid")" 2>/dev/null; do sleep 0.1; done
  # Both reports end at the agent's last sample as the store holds it,
  # once that stops moving: a store may show what it scraped a moment late
  # (VictoriaMetrics adds it to what queries see about every second, later
  # on a loaded machine), and the seconds after its last scrape are the
  # agent's alone. A range function, unlike an instant query, still sees
  # the samples after Prometheus' staleness marker.
  last=""
  for _ in $(seq 60); do
    seen=$(prom_query 'max(max_over_time(tarmac_last_sample_timestamp_seconds[10m]))' | jq -r '.data.result[0].value[1] // ""')
    [[ -n $seen && $seen == "$last" ]] && break
    last=$seen
    sleep 1
  done
  [ -n "$last" ]
  until=${last%.*}
  # What the store cannot see: each state counter's value at its first
  # scrape (increase() counts from there; the agent counted from its
  # start, which a loaded machine can put seconds before that scrape).
  unseen=$(curl -sf "http://127.0.0.1:$PROM_PORT/api/v1/query" --data-urlencode "time=$until" \
    --data-urlencode 'query=sum(min_over_time(tarmac_gpu_state_seconds_total[1h]))' |
    jq -r '.data.result[0].value[1] // 0')
  db=(--db "$WORLD/solo/state/tarmac.db" --gpu-hour-cost 3.6 --currency EUR --until "@$until")
  fleet=(--prometheus "http://127.0.0.1:$PROM_PORT" --since 1h --until "@$until" --json)
  run tarmac report --since 1h --format json "${db[@]}"
  [ "$status" -eq 0 ]
  echo "$output" > "$WORLD/own.json"
  run tarmac fleet report "${fleet[@]}"
  [ "$status" -eq 0 ]
  echo "$output" > "$WORLD/fleet.json"
  run tarmac report --since 1h --format json --by user "${db[@]}"
  [ "$status" -eq 0 ]
  echo "$output" > "$WORLD/own-users.json"
  run tarmac fleet report "${fleet[@]}" --by user
  [ "$status" -eq 0 ]
  echo "$output" > "$WORLD/fleet-users.json"
  own=$(jq -c '[([.gpus[].busy_hours] | add), ([.gpus[].held_idle_hours] | add),
                ([.gpus[] | .busy_hours + .idle_hours + .unknown_hours] | add)]' "$WORLD/own.json")
  fleet=$(jq -c '.total | [.busy_hours, .held_idle_hours, .busy_hours + .idle_hours + .held_idle_hours + .unknown_hours]' \
    "$WORLD/fleet.json")
  user=$(id -un)
  split='[.gpu_hours_held, .gpu_hours_busy, .held_idle_by_lease_hours, .held_idle_by_process_hours,
          .busy_cost, .held_idle_by_lease_cost, .held_idle_by_process_cost]'
  own_user=$(jq -c --arg u "$user" ".owners[] | select(.owner == \$u) | $split" "$WORLD/own-users.json")
  fleet_user=$(jq -c --arg u "$user" ".rows[] | select(.key == \$u) | ${split/gpu_hours_busy/busy_hours}" \
    "$WORLD/fleet-users.json")
  echo "own [busy, held idle, read]: $own; fleet: $fleet"
  echo "$user [held, busy, idle in lease, idle by processes, their costs]: own $own_user; fleet $fleet_user"
  echo "seconds before the store's first scrape of each state: $unseen"
  # Every figure within 1 %, but for the history's one-second resolution
  # at each edge of a spell (a job, a lease beginning or ending mid-second:
  # the history counts whole seconds, the counters fifths): at most a
  # second per edge, which a range of hours makes negligible. The hours
  # read too, but for the edges of the agent's life (its counters' first
  # seconds can precede Prometheus' first reading of them, and the range
  # ends up to a second after it stopped: at most 3 s per GPU).
  python3 - "$own" "$fleet" "$own_user" "$fleet_user" "$unseen" <<'PY'
import json, sys
own, fleet, own_user, fleet_user = (json.loads(a) for a in sys.argv[1:5])
unseen = float(sys.argv[5]) / 3600
for name, a, b in zip(["busy", "held idle"], own, fleet):
    assert a > 0 and abs(a - b) <= 0.01 * a + 2 / 3600, (name, a * 3600, b * 3600)
read, fleet_read = own[2], fleet[2] + unseen
assert abs(read - fleet_read) <= 0.01 * read + 2 * 3 / 3600, (read, fleet_read)
names = ["held", "busy", "idle in lease", "idle by processes"]
edges = [6, 2, 2, 2]  # Spells' edges in each figure.
for name, a, b, n in zip(names, own_user[:4], fleet_user[:4], edges):
    assert a > 0 and abs(a - b) <= 0.01 * a + n / 3600, (name, a * 3600, b * 3600)
for name, a, b, hours in zip(names[1:], own_user[4:], fleet_user[4:], own_user[1:4]):
    assert abs(a - hours * 3.6) < 1e-6 and abs(a - b) <= 0.01 * a + 2 * 3.6 / 3600, (name, a, b)
PY
}

@test "fleet status of a faults world shows its lost GPU and throttling as the node's own status does" {
  port=$(free_port)
  start_prometheus 1s "$port"
  [ "$(start_node node-d faults.toml "$port")" == "$port" ]
  for _ in $(seq 300); do
    [[ $(prom_query 'count(tarmac_gpu_info)' | jq -r '.data.result[0].value[1] // 0') == 4 ]] &&
      [[ $(prom_query 'sum(tarmac_gpu_lost)' | jq -r '.data.result[0].value[1] // 0') == 1 ]] &&
      [[ $(prom_query 'count(tarmac_gpu_throttled == 1)' | jq -r '.data.result[0].value[1] // 0') -ge 2 ]] &&
      [[ $(prom_query 'count(tarmac_gpu_health{verdict="drain"} == 1)' | jq -r '.data.result[0].value[1] // 0') == 3 ]] && break
    sleep 0.1
  done
  TARMAC_SIM_DIR="$WORLD/node-d/world" tarmac status --json --socket "$WORLD/node-d/t.sock" > "$WORLD/own.json"
  run tarmac fleet status --prometheus "http://127.0.0.1:$PROM_PORT" --json
  [ "$status" -eq 0 ]
  echo "$output" > "$WORLD/fleet.json"
  # The lost GPU, and what throttles each GPU, as the node says.
  [ "$(jq -c '[.gpus[] | select(.health == "lost") | .index]' "$WORLD/own.json")" == "[1]" ]
  [ "$(jq -c '[.nodes[0].gpus[] | select(.lost) | .index]' "$WORLD/fleet.json")" == "[1]" ]
  [ "$(jq -c '[.gpus[] | [.index, ((.throttle_reasons // []) | sort)]]' "$WORLD/own.json")" == \
    "$(jq -c '[.nodes[0].gpus[] | [.index, (.throttle_reasons // [] | sort)]]' "$WORLD/fleet.json")" ]
  [ "$(jq -c '.nodes[0].gpus[0].throttle_reasons | length' "$WORLD/fleet.json")" -ge 1 ]
  # A lost GPU is neither idle nor a candidate for pick.
  [ "$(jq '.nodes[0].gpus[1].idle' "$WORLD/fleet.json")" == false ]
  run tarmac fleet pick --prometheus "http://127.0.0.1:$PROM_PORT" --count 4
  [ "$status" -eq 1 ]
  # Each GPU's health verdict as the node judges it, with its evidence; no
  # GPU to drain is ever picked: only GPU 0 (degraded) is on offer.
  [ "$(jq -c '[.gpus[].verdict]' "$WORLD/own.json")" == '["degraded","drain","drain","drain"]' ]
  [ "$(jq -c '[.nodes[0].gpus[].verdict]' "$WORLD/fleet.json")" == '["degraded","drain","drain","drain"]' ]
  [ "$(jq -c '[.nodes[0].gpus[] | [.index, .pcie_link_width, .xid_errors]]' "$WORLD/fleet.json")" == \
    '[[0,null,null],[1,null,null],[2,8,null],[3,null,2]]' ]
  run tarmac fleet pick --prometheus "http://127.0.0.1:$PROM_PORT" --count 1 --json
  [ "$status" -eq 0 ]
  [ "$(echo "$output" | jq -c '[.gpus[].index]')" == '[0]' ]
  run tarmac fleet pick --prometheus "http://127.0.0.1:$PROM_PORT" --count 2
  [ "$status" -eq 1 ]
  run tarmac fleet status --prometheus "http://127.0.0.1:$PROM_PORT"
  [[ "$output" == *"DRAIN  "*"PCIe x8"* ]]
  [[ "$output" == *"2 Xids"* ]]
  [[ "$output" == *"PCIe x8  ECC 1 uncorrected"* ]]
  [ "$(jq -c '[.nodes[0].gpus[] | .ecc_uncorrected]' "$WORLD/fleet.json")" == '[null,null,1,null]' ]
  # By node: the lost GPU and the verdicts counted as the GPUs listed say.
  run tarmac fleet status --prometheus "http://127.0.0.1:$PROM_PORT" --by node --json
  [ "$status" -eq 0 ]
  [ "$(echo "$output" | jq -c '.nodes[0] | [.gpus, .lost, .drain, .degraded]')" == '[4,1,3,1]' ]
  run tarmac fleet status --prometheus "http://127.0.0.1:$PROM_PORT" --by node
  [[ "$output" == *"1 LOST  3 DRAIN  1 degraded"* ]]
}

@test "a store with no node yet says why, not only an empty fleet" {
  start_prometheus 1s
  run tarmac fleet status --prometheus "http://127.0.0.1:$PROM_PORT"
  [ "$status" -eq 0 ]
  [[ "$output" == *"fleet: 0 nodes"* ]]
  [[ "$output" == *"no node reports to this store"*"-search.latencyOffset"* ]]
  run tarmac fleet status --prometheus "http://127.0.0.1:$PROM_PORT" --json
  [[ $(jq -r '.warnings[0]' <<< "$output") == "no node reports to this store"* ]]
}
