#!/usr/bin/env bash
# Train with environment workers hosted by Slurm: submit this script with
# as many tasks as workers; the trainer runs in the batch step, starts one
# `agenttrainer env-server` per task with srun (env.args.launcher = "srun")
# and steps the environment server COMMAND behind each of them, over TCP
# authenticated with a fresh secret.
#
#   sbatch --ntasks=4 --cpus-per-task=1 scripts/slurm-env-workers.sh \
#       'env.args.command=["python3", "remote/gym_server.py", "--env", "CartPole-v1"]' \
#       env.num_envs=16 ppo.total_timesteps=500000
#
# Arguments are the training's key=value overrides (the command above is a
# default you can replace); env.id, env.args.launcher and env.args.workers
# are set here. AGENTTRAINER names the binary (default: agenttrainer on
# PATH); RUNS_DIR the runs directory (default: runs). The rendezvous
# directory is made in the working directory, which the nodes must share
# (sbatch's default: the directory you submit from).
#SBATCH --job-name=agenttrainer-env-workers
#SBATCH --output=agenttrainer-env-workers-%j.out
set -euo pipefail
bin=${AGENTTRAINER:-agenttrainer}
workers=${SLURM_NTASKS:?submit with sbatch --ntasks=N (one task per env worker)}
has_command=0
for a in "$@"; do case "$a" in env.args.command=*) has_command=1 ;; esac; done
args=(env.id=remote env.args.launcher=srun "env.args.workers=$workers")
if [ "$has_command" = 0 ]; then
  args+=('env.args.command=["python3", "remote/cartpole_server.py"]')
fi
echo "job $SLURM_JOB_ID: $workers env workers on ${SLURM_JOB_NODELIST:-?}"
exec "$bin" train "trainer.runs_dir=${RUNS_DIR:-runs}" "${args[@]}" "$@"
