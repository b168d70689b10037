#!/usr/bin/env bats
# The Debian packages as an administrator gets them: built by CPack from
# this build, checked by lintian (no error, no warning), and installed into
# a throwaway root with dpkg (maintainer scripts run outside a chroot, with
# DPKG_ROOT): the files, the tarmac-admin group, the conffile, an upgrade
# that keeps the state and an edited configuration, a remove that keeps
# both, a purge that removes them; tarmac-sim beside it, and the fake NVML
# library never in tarmac.

setup_file() {
  export PKG_WORK=$(mktemp -d /tmp/tarmac-package-XXXXXX)
  (cd "$TARMAC_BUILD_DIR" && cpack -G DEB -B "$PKG_WORK/out" >"$PKG_WORK/cpack.log" 2>&1)
}

teardown_file() {
  rm -rf "$PKG_WORK"
}

setup() {
  ROOT="$PKG_WORK/root-$BATS_TEST_NUMBER"
  mkdir -p "$ROOT/var/lib/dpkg/info" "$ROOT/var/lib/dpkg/updates" "$ROOT/etc"
  touch "$ROOT/var/lib/dpkg/status" "$ROOT/var/lib/dpkg/available"
  printf 'root:x:0:\n' > "$ROOT/etc/group"
  printf 'root:*::\n' > "$ROOT/etc/gshadow"
  printf 'root:x:0:0:root:/root:/bin/sh\n' > "$ROOT/etc/passwd"
  printf 'root:*:19000:0:99999:7:::\n' > "$ROOT/etc/shadow"
  DEB=$(ls "$PKG_WORK"/out/tarmac_*_amd64.deb)
  SIM=$(ls "$PKG_WORK"/out/tarmac-sim_*_amd64.deb)
}

# dpkg on the throwaway root; the host's libraries satisfy the binaries.
root_dpkg() {
  dpkg --root="$ROOT" --force-script-chrootless --force-depends "$@"
}

@test "the packages are built, stripped, with their debug info apart, and lintian finds nothing" {
  ls "$PKG_WORK"/out/tarmac-dbgsym_*_amd64.ddeb "$PKG_WORK"/out/tarmac-sim-dbgsym_*_amd64.ddeb
  run lintian --fail-on error,warning "$DEB" "$SIM"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" != *"E: "* && "$output" != *"W: "* ]]
  # Stripped: no debug section in the installed binaries.
  dpkg-deb -x "$DEB" "$PKG_WORK/x"
  ! readelf -S "$PKG_WORK/x/usr/bin/tarmac" | grep -q '\.debug_info'
  readelf -n "$PKG_WORK/x/usr/bin/tarmac" | grep -q 'Build ID'
  # tarmac and tarmacd together well under 15 MiB.
  [ $(( $(stat -c %s "$PKG_WORK/x/usr/bin/tarmac") + $(stat -c %s "$PKG_WORK/x/usr/bin/tarmacd") )) -lt $((15 << 20)) ]
  # No fake NVML library in the production package.
  ! dpkg-deb -c "$DEB" | grep -q libnvidia-ml
  dpkg-deb -c "$SIM" | grep -q 'usr/libexec/tarmac/fakenvml/libnvidia-ml.so.1'
  [ "$(dpkg-deb -f "$DEB" Maintainer)" != "tarmac@localhost" ]
  [[ "$(dpkg-deb -f "$DEB" Maintainer)" != *localhost* ]]
  [[ "$(dpkg-deb -f "$SIM" Depends)" == *"tarmac (= "* ]]
}

# apt installs recommendations by default: the package must recommend
# nothing a node agent does not need (it once recommended Prometheus, and a
# minimal root pulled 83 packages and enabled five services with it).
# Simulated against this machine's package lists, from an empty system.
@test "apt with Recommends on, as by default, pulls in only what the package depends on" {
  ls /var/lib/apt/lists/*_Packages* >/dev/null 2>&1 || skip "no apt package lists on this machine"
  : > "$PKG_WORK/empty-status"
  simulate() {  # The packages apt would install, recommendations on.
    apt-get -s -o Dir::State::Status="$PKG_WORK/empty-status" -o APT::Install-Recommends=true install "$@" \
      2>/dev/null | awk '/^Inst / {print $2}' | sort
  }
  # The package against what its dependencies alone pull in (with their own
  # recommendations): the same, but for tarmac itself.
  mapfile -t depends < <(dpkg-deb -f "$DEB" Depends | tr ',' '\n' | sed 's/(.*)//; s/|.*//; s/ //g')
  package=$(simulate "$DEB")
  alone=$(simulate "${depends[@]}")
  echo "with Recommends: $(wc -l <<< "$package") packages; its dependencies alone: $(wc -l <<< "$alone")"
  [ "$(comm -23 <(echo "$package") <(echo "$alone"))" == tarmac ]
  ! grep -qxE 'prometheus|prometheus-node-exporter|smartmontools' <<< "$package"
  [ -z "$(dpkg-deb -f "$DEB" Recommends)" ]
  [[ "$(dpkg-deb -f "$DEB" Suggests)" == *prometheus* ]]
}

@test "install: the files, the group, the conffile; the commands run, helpers from libexec" {
  run root_dpkg -i "$DEB"
  echo "$output"
  [ "$status" -eq 0 ]
  grep -q '^tarmac-admin:x:[0-9]*:$' "$ROOT/etc/group"
  for f in usr/bin/tarmac usr/bin/tarmacd usr/libexec/tarmac/tarmac-top usr/libexec/tarmac/tarmac-fleet \
           usr/libexec/tarmac/tarmac-backfill-runner lib/systemd/system/tarmac.service etc/tarmac/tarmac.toml \
           usr/share/tarmac/prometheus/tarmac.rules.yml usr/share/tarmac/alertmanager/alertmanager.yml \
           usr/share/tarmac/grafana/tarmac-fleet.json usr/share/tarmac/kubernetes/kustomization.yaml \
           usr/share/tarmac/slurm/prolog.sh usr/share/man/man1/tarmac.1.gz usr/share/doc/tarmac/copyright \
           usr/share/bash-completion/completions/tarmac; do
    [ -e "$ROOT/$f" ] || { echo "missing: $f"; false; }
  done
  dpkg-query --admindir="$ROOT/var/lib/dpkg" -W -f='${Conffiles}\n' tarmac | grep -q '/etc/tarmac/tarmac.toml'
  grep -q '^ExecStartPre=/usr/bin/tarmac config check /etc/tarmac/tarmac.toml' "$ROOT/lib/systemd/system/tarmac.service"
  # The installed tarmac finds tarmac-top and tarmac-fleet in /usr/libexec/tarmac.
  run "$ROOT/usr/bin/tarmac" top --help
  [ "$status" -eq 0 ]
  [[ "$output" == *"tarmac top"* ]]
  run "$ROOT/usr/bin/tarmac" config check "$ROOT/etc/tarmac/tarmac.toml"
  [ "$status" -eq 0 ]
  # tarmac-sim beside it.
  run root_dpkg -i "$SIM"
  [ "$status" -eq 0 ]
  [ -e "$ROOT/usr/libexec/tarmac/fakenvml/libnvidia-ml.so.1" ]
  [ -e "$ROOT/usr/share/tarmac-sim/scenarios/lab-8gpu.toml" ]
}

@test "upgrade keeps the state and an edited configuration; remove keeps both; purge removes them and says so" {
  root_dpkg -i "$DEB"
  mkdir -p "$ROOT/var/lib/tarmac"
  echo "leases" > "$ROOT/var/lib/tarmac/leases.db"
  printf '\n[zombies]\nidle_for = "45m"\n' >> "$ROOT/etc/tarmac/tarmac.toml"
  run root_dpkg -i "$DEB"
  [ "$status" -eq 0 ]
  [ "$(cat "$ROOT/var/lib/tarmac/leases.db")" = leases ]
  grep -q 'idle_for = "45m"' "$ROOT/etc/tarmac/tarmac.toml"
  [ "$(grep -c '^tarmac-admin:' "$ROOT/etc/group")" -eq 1 ]
  run root_dpkg -r tarmac
  [ "$status" -eq 0 ]
  [ ! -e "$ROOT/usr/bin/tarmac" ]
  [ -e "$ROOT/var/lib/tarmac/leases.db" ]
  grep -q 'idle_for = "45m"' "$ROOT/etc/tarmac/tarmac.toml"
  run root_dpkg -P tarmac
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"removing the agent's state"* ]]
  [ ! -e "$ROOT/var/lib/tarmac" ]
  [ ! -e "$ROOT/etc/tarmac/tarmac.toml" ]
  # The group stays: files may still name it.
  grep -q '^tarmac-admin:' "$ROOT/etc/group"
}
