#!/bin/sh
# Slurm Epilog= for nodes that run the tarmac agent (docs/slurm.md): ends the
# job's lease, terminates the processes the job left on its GPUs (each
# verified by start time and owner, each an event), and logs one line of how
# the job used its GPUs. Never fails the job.
#   slurm.conf: Epilog=/usr/share/tarmac/slurm/epilog.sh
exec /usr/bin/tarmac slurm epilog
