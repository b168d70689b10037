#!/bin/sh
# Slurm Prolog= for nodes that run the tarmac agent (docs/slurm.md): records
# the job's GPUs as a lease of kind slurm. Never fails the job: when the
# agent cannot be reached, tarmac says why in slurmd's log and exits 0.
#   slurm.conf: Prolog=/usr/share/tarmac/slurm/prolog.sh
exec /usr/bin/tarmac slurm prolog
