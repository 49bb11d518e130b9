#!/usr/bin/env bash
# How env workers scale, side by side with the peers, on one environment
# whose step costs 1 ms (scripts/sleepenv.py): env steps/s of agenttrainer's
# env.args.workers (BenchmarkWorkers: one sub-environment per worker for
# 1…16 workers, 16 sub-environments shared by 1…16 workers, and the
# CPU-bound variant at 1 and 2), then Gymnasium's AsyncVectorEnv and SB3's
# SubprocVecEnv (scripts/env_scaling_peer.py).
#
#   scripts/env-scaling.sh PEERS_DIR [PYTHON]
#
# PEERS_DIR holds the sources of gymnasium and stable_baselines3 (for
# example `git archive v1.2.2 gymnasium | tar -x -C DIR` in a clone of
# Farama-Foundation/Gymnasium, and `git archive v2.7.1 stable_baselines3`
# in one of DLR-RM/stable-baselines3); PYTHON is a python3 with NumPy and
# cloudpickle (default /usr/bin/python3: Debian's python3-numpy and
# python3-cloudpickle). agenttrainer's workers serve the same Gymnasium
# environment through remote/gym_server.py.
set -euo pipefail
cd "$(dirname "$0")/.."
peers=${1:?usage: $0 PEERS_DIR [PYTHON]}
py=${2:-/usr/bin/python3}
reps=${REPEAT:-3}
echo "== $(lscpu | sed -n 's/^Model name: *//p') · $(nproc) cores · load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== agenttrainer env workers (go test -bench Workers, $reps runs; env steps/s)"
AGENTTRAINER_GYM_PYTHONPATH=$(cd "$peers" && pwd) AGENTTRAINER_GYM_PYTHON=$py \
  go test -run '^$' -bench Workers -benchtime 400x -count "$reps" ./envs/remote | grep -E '^Benchmark'
echo "== peers, one environment per process ($reps runs each; median)"
PYTHONPATH="$peers:scripts" "$py" scripts/env_scaling_peer.py --kind sleep --workers 1,2,4,8,16 --repeat "$reps"
PYTHONPATH="$peers:scripts" "$py" scripts/env_scaling_peer.py --kind spin --workers 1,2 --repeat "$reps"
