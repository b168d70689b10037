#!/usr/bin/env bash
# A one-node Slurm cluster in a temporary directory, for comparing
# `tarmac run` with `srun --gres=gpu:1`. Needs root, slurm-wlm and munge.
# Usage: slurm_local.sh start DIR   (prints the SLURM_CONF path when ready)
#        SLURM_LOCAL_EXTRA: more slurm.conf lines (Prolog=, Epilog=);
#        SLURM_LOCAL_GRES: the node's Gres= (default gpu:8); a
#        DIR/gres.conf already there is kept (else placeholder File=s).
#        slurm_local.sh stop DIR
set -euo pipefail
cmd=$1
dir=$2
if [[ $cmd == stop ]]; then
  for f in slurmd slurmctld munged; do
    [[ -f $dir/$f.pid ]] || continue
    pid=$(cat "$dir/$f.pid")
    kill "$pid" 2>/dev/null || continue
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done  # Gone before its files are.
  done
  exit 0
fi
command -v slurmctld >/dev/null && command -v munged >/dev/null || { echo "slurm-wlm or munge missing" >&2; exit 1; }
mkdir -p "$dir"/{state,spool,munge,dev}
touch "$dir"/dev/nvidia{0..7}
node=$(hostname -s)
cpus=$(nproc)
# munge: its own key and socket in $dir.
dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
chown munge:munge "$dir/munge" "$dir/munge/munge.key" 2>/dev/null || true
chmod 0700 "$dir/munge"
chmod 0400 "$dir/munge/munge.key"
munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
  --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" --seed-file="$dir/munge/seed"
cat > "$dir/slurm.conf" <<CONF
ClusterName=bench
SlurmctldHost=$node
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
SlurmctldPort=16817
SlurmdPort=16818
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
NodeName=$node CPUs=$cpus RealMemory=1000 Gres=${SLURM_LOCAL_GRES:-gpu:8} State=UNKNOWN
PartitionName=bench Nodes=$node Default=YES MaxTime=INFINITE State=UP
${SLURM_LOCAL_EXTRA:-}
CONF
[[ -f $dir/gres.conf ]] || echo "Name=gpu File=$dir/dev/nvidia[0-7]" > "$dir/gres.conf"
export SLURM_CONF=$dir/slurm.conf
slurmctld -f "$dir/slurm.conf"
slurmd -f "$dir/slurm.conf"
for _ in $(seq 100); do
  if sinfo -h -o %T 2>/dev/null | grep -qE '^(idle|mixed)'; then
    echo "$dir/slurm.conf"
    exit 0
  fi
  sleep 0.2
done
echo "slurm did not come up; see $dir/*.log" >&2
exit 1
