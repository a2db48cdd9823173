#!/usr/bin/env bash
# kmserve with distributed exact fits on a Slurm cluster: submit with
#   sbatch deploy/mpi/kmserve-slurm.sh
# The batch step runs the daemon on the allocation's first node; each fit
# with "distributed": true starts `srun kmserve-mpi` over all the
# allocation's tasks (one rank per node, all cores to its BLAS). The
# models directory must be on storage every node sees (the staging files
# live there). Checked by shellcheck (make check-deploy). See
# docs/distributed.md.
#SBATCH --job-name=kmserve
#SBATCH --nodes=16
#SBATCH --ntasks-per-node=1
#SBATCH --cpus-per-task=32
#SBATCH --mem=0
#SBATCH --time=24:00:00
set -euo pipefail

MODELS_DIR=${MODELS_DIR:-/shared/kmserve/models}
KMSERVE_BIN=${KMSERVE_BIN:-/usr/local/bin}
LISTEN=${LISTEN:-0.0.0.0:8080}
RANK_BUDGET_MB=${RANK_BUDGET_MB:-200000}

mkdir -p "$MODELS_DIR"
# Each rank's BLAS uses its node's cores (srun passes the environment on).
export OPENBLAS_NUM_THREADS=${SLURM_CPUS_PER_TASK}
# One rank per node; --overlap lets the fits' steps share the nodes with
# the daemon's step.
launch="srun --overlap --mpi=pmix --nodes=${SLURM_NNODES} --ntasks=${SLURM_NTASKS} --cpus-per-task=${SLURM_CPUS_PER_TASK}"

exec srun --overlap --nodes=1 --ntasks=1 "$KMSERVE_BIN/kmserve" \
  --listen "$LISTEN" \
  --models-dir "$MODELS_DIR" \
  --mpi-launch "$launch" \
  --mpi-ranks "$SLURM_NTASKS" \
  --mpi-memory-budget-mb "$RANK_BUDGET_MB" \
  --mpi-worker "$KMSERVE_BIN/kmserve-mpi" \
  --blas-threads "$SLURM_CPUS_PER_TASK"
