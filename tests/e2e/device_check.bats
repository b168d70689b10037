#!/usr/bin/env bats
# scripts/device-check as it runs on a GPU machine, with the fake library
# standing in for the driver's (found as libnvidia-ml.so.1 on the library
# path, as the driver's is) and a stand-in nvidia-smi that names the board:
# the sweep of the "driver" as root and as nobody, the sweep of the fake on
# a world shaped like the machine, and the differences between the two,
# none when both are the same library.

setup() {
  WORK=$(mktemp -d /tmp/tarmac-device-check-XXXXXX)
  chmod 755 "$WORK"
  mkdir -p "$WORK/bin" "$WORK/world"
  chmod 777 "$WORK/world"
  cat > "$WORK/bin/nvidia-smi" <<'SH'
#!/bin/sh
case "$*" in
  *--query-gpu=name*) echo "NVIDIA H100 80GB HBM3" ;;
  *) echo "Attached GPUs : 1" ;;
esac
SH
  chmod +x "$WORK/bin/nvidia-smi"
  printf '[[gpu]]\nmodel = "NVIDIA H100 80GB HBM3"\n' > "$WORK/machine.toml"
  chmod 644 "$WORK/machine.toml"
}

teardown() {
  rm -rf "$WORK"
}

@test "device-check sweeps the driver's library and finds no difference from the fake on the same board" {
  run env PATH="$WORK/bin:$PATH" LD_LIBRARY_PATH="$TARMAC_BUILD_DIR/fakenvml" OUT="$WORK/out" \
    TARMAC_SIM_SCENARIO="$WORK/machine.toml" TARMAC_SIM_DIR="$WORK/world" \
    "$TARMAC_SOURCE_DIR/scripts/device-check" "$TARMAC_BUILD_DIR"
  [ "$status" -eq 0 ]
  [[ "$output" == *"functions answered on the driver"* ]]
  grep -q '^done$' "$WORK/out/nvml-sweep-root.tsv"
  grep -q '^done$' "$WORK/out/nvml-sweep-fake.tsv"
  # Every export but the setters and MIG management, which it leaves alone.
  [ "$(cut -f2 "$WORK/out/nvml-sweep-root.tsv" | grep '^nvml' | sed 's/#size//' | sort -u | wc -l)" -gt 250 ]
  ! grep -q $'^call\tnvmlDeviceSet' "$WORK/out/nvml-sweep-root.tsv"
  ! grep -q $'^call\tnvmlDeviceCreateGpuInstance' "$WORK/out/nvml-sweep-root.tsv"
  if [ "$(id -u)" = 0 ]; then
    grep -q '^done$' "$WORK/out/nvml-sweep-user.tsv"
    grep -q $'\tgpu,user\t' "$WORK/out/nvml-sweep-user.tsv"
  fi
  [ -f "$WORK/out/nvml-sweep-diff.txt" ]
  [ ! -s "$WORK/out/nvml-sweep-diff.txt" ]
  grep -q 'Attached GPUs' "$WORK/out/nvidia-smi.txt"
}

@test "device-check says what is missing when the sweep was not built" {
  mkdir -p "$WORK/empty-build"
  run env OUT="$WORK/out" "$TARMAC_SOURCE_DIR/scripts/device-check" "$WORK/empty-build"
  [ "$status" -eq 2 ]
  [[ "$output" == *"tarmac-nvml-sweep is missing: run make build first"* ]]
}
