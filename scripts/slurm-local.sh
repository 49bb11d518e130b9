#!/usr/bin/env bash
# A single-node Slurm cluster on this machine, for the sweep tests and demos:
#   scripts/slurm-local.sh start   # munged, slurmctld, slurmd as root; prints the env to use
#                                  # (and SLURM_LOCAL_STARTED=1 when it started them)
#   scripts/slurm-local.sh stop    # stops the daemons it started, by their PIDs
#   scripts/slurm-local.sh env     # prints `export SLURM_CONF=...`
# Needs Debian's slurmctld slurmd slurm-client munge (bookworm: Slurm 22.05)
# and root. State, logs and the config live under $SLURM_LOCAL_DIR
# (default /tmp/agenttrainer-slurm); ports $SLURM_LOCAL_PORT and the next one
# (default 16817). Without slurmdbd there is no accounting: sacct says so,
# and job states come from squeue (--states=all) and scontrol.
set -euo pipefail
dir=${SLURM_LOCAL_DIR:-/tmp/agenttrainer-slurm}
port=${SLURM_LOCAL_PORT:-16817}
conf=$dir/slurm.conf

say() { echo "slurm-local: $*" >&2; }

start() {
  for b in munged slurmctld slurmd sbatch squeue scancel; do
    command -v "$b" >/dev/null || { say "$b is not installed (apt-get install -y slurmctld slurmd slurm-client munge)"; exit 3; }
  done
  [ "$(id -u)" = 0 ] || { say "the daemons must start as root"; exit 3; }
  if [ -f "$dir/slurmctld.pid" ] && kill -0 "$(cat "$dir/slurmctld.pid")" 2>/dev/null; then
    say "already running in $dir"; env_line; return
  fi
  mkdir -p "$dir"/{ctld,spool,munge}
  chmod 700 "$dir/munge"
  host=$(hostname -s)
  cpus=$(nproc)
  mem=$(awk '/MemTotal/ {print int($2/1024*0.8)}' /proc/meminfo)
  [ -f "$dir/munge/munge.key" ] || { dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 2>/dev/null; chmod 400 "$dir/munge/munge.key"; }
  munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/munged.seed"
  cat > "$conf" <<CONF
ClusterName=agenttrainer
SlurmctldHost=$host
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/ctld
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MinJobAge=600
KillWait=10
NodeName=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
  export SLURM_CONF=$conf
  # -c: a fresh cluster; jobs remembered from a killed earlier run would
  # otherwise hold the one node and leave the tests' jobs pending.
  slurmctld -c -f "$conf"
  slurmd -f "$conf"
  for _ in $(seq 100); do
    if sinfo -h -o '%T' 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then
      say "up: $host with $cpus CPUs, partition debug"; env_line; echo "export SLURM_LOCAL_STARTED=1"; return
    fi
    sleep 0.2
  done
  say "the cluster did not come up; logs in $dir"; tail -5 "$dir"/slurmctld.log "$dir"/slurmd.log >&2 || true
  stop; exit 1
}

env_line() { echo "export SLURM_CONF=$conf"; }

stop() {
  for f in "$dir/slurmd.pid" "$dir/slurmctld.pid" "$dir/munge/munged.pid"; do
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid"
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
    rm -f "$f"
  done
  say "stopped"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  env) env_line ;;
  *) echo "usage: $0 start|stop|env" >&2; exit 2 ;;
esac
