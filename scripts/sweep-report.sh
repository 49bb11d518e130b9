#!/usr/bin/env bash
# The figures sweeps are judged by, from the real binary:
#   1. examples/sweeps/cartpole-random.toml (16 CartPole trials: learning
#      rate log-uniform, entropy coefficient uniform, two seeds) with ASHA,
#      and the same sweep without early stopping: wall time, trials cut, the
#      best configuration;
#   2. the ASHA sweep through the single-node Slurm cluster
#      (scripts/slurm-local.sh), with squeue while it runs and sacct after
#      (skipped with a message where Slurm cannot start);
#   3. a sweep SIGKILLed mid-way and resumed: every trial once in the
#      results, the trials that had finished not run again.
# Bad specs (22 kinds, exit 2, nothing started) are TestBadSpecs:
#   go test ./cli/sweep -run TestBadSpecs -v
#
#   scripts/sweep-report.sh [1|2|3 ...]     (default: all three)
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
at="$work/agenttrainer"
trap 'rm -rf "$work"' EXIT
go build -o "$at" .
spec=examples/sweeps/cartpole-random.toml
parts=${*:-1 2 3}

# summary DIR: trials by state, the best configuration, from sweep.jsonl.
summary() {
  python3 - "$1" <<'PY'
import collections, json, sys
recs = [json.loads(l) for l in open(sys.argv[1] + "/sweep.jsonl") if l.strip()]
states = collections.Counter(r["state"] for r in recs)
print(f"  {len(recs)} trials: " + ", ".join(f"{n} {s}" for s, n in sorted(states.items())))
print(f"  steps run in all: {sum(r['steps'] for r in recs):,}")
PY
  grep -m1 "best configuration" "$1/sweep.log" 2>/dev/null | sed 's/^/  /' || true
}

if [[ " $parts " == *" 1 "* ]]; then
  echo "== 1. $spec on this machine ($(nproc) cores), with ASHA and without early stopping"
  noes="$work/no-early-stop.toml"
  sed -e 's/^name = .*/name = "cartpole-random-all"/' -e '/^\[early_stop\]/,$d' "$spec" >"$noes"
  for s in "$spec" "$noes"; do
    start=$(date +%s.%N)
    "$at" sweep "$s" trainer.runs_dir="$work/runs" >"$work/out.txt" 2>&1
    end=$(date +%s.%N)
    name=$(sed -n 's/^name = "\(.*\)"/\1/p' "$s")
    cp "$work/out.txt" "$work/runs/$name/sweep.log"
    printf '%s: wall %.1f s\n' "$name" "$(echo "$end - $start" | bc)"
    summary "$work/runs/$name"
  done
fi

if [[ " $parts " == *" 2 "* ]]; then
  echo "== 2. the same sweep through Slurm (single-node cluster)"
  if ! bash scripts/slurm-local.sh start >"$work/slurm.txt" 2>&1; then
    echo "  skipped: the cluster did not start: $(tail -3 "$work/slurm.txt")"
  else
    export SLURM_CONF=/tmp/agenttrainer-slurm/slurm.conf
    start=$(date +%s.%N)
    "$at" sweep --backend slurm "$spec" trainer.runs_dir="$work/slurm-runs" >"$work/out.txt" 2>&1 &
    pid=$!
    shown=""
    for _ in $(seq 80); do # the queue as it fills, then with trials running
      q=$(squeue 2>/dev/null || true)
      if [ -z "$shown" ] && [ "$(echo "$q" | wc -l)" -gt 1 ]; then
        echo "  squeue as the array is queued:"; echo "$q" | head -6 | sed 's/^/    /'; shown=queued
      fi
      if [ "$shown" = queued ] && echo "$q" | grep -q ' R '; then
        echo "  squeue with trials running:"; echo "$q" | head -8 | sed 's/^/    /'; break
      fi
      sleep 0.25
    done
    wait "$pid" || echo "  the sweep exited with $?"
    end=$(date +%s.%N)
    printf '  wall %.1f s\n' "$(echo "$end - $start" | bc)"
    d=$(ls -d "$work"/slurm-runs/*/ | head -1)
    cp "$work/out.txt" "$d/sweep.log"
    summary "$d"
    echo "  sacct:"
    { sacct --format=JobID,JobName,State,ExitCode,Elapsed 2>&1 || true; } | head -20 | sed "s/^/    /"
    echo "  Slurm job ids and states in sweep.jsonl:"
    python3 -c 'import json,sys; [print("    %s job %s: %s (%s)" % (r["trial"], r.get("job_id"), r.get("slurm_state"), r["state"])) for r in map(json.loads, open(sys.argv[1]))]' "$d/sweep.jsonl" | head -16
  fi
fi

if [[ " $parts " == *" 3 "* ]]; then
  echo "== 3. SIGKILL mid-way, then --resume"
  "$at" sweep "$spec" --parallel 2 trainer.runs_dir="$work/kill-runs" >"$work/kill1.txt" 2>&1 &
  pid=$!
  d="$work/kill-runs/cartpole-random"
  until [ -f "$d/sweep.jsonl" ] && [ "$(grep -c '"state":"done"\|"state":"stopped"' "$d/sweep.jsonl")" -ge 4 ]; do sleep 0.2; done
  kill -9 "$pid"
  wait "$pid" 2>/dev/null || true
  python3 -c 'import json,sys; print("  at the kill:", {s: sum(1 for r in map(json.loads, open(sys.argv[1])) if r["state"] == s) for s in ("pending","running","done","stopped","interrupted")})' "$d/sweep.jsonl"
  cp "$d/sweep.jsonl" "$work/before.jsonl"
  "$at" sweep --resume "$d" >"$work/kill2.txt" 2>&1
  python3 - "$work/before.jsonl" "$d/sweep.jsonl" <<'PY'
import json, sys
before = {r["trial"]: r for r in map(json.loads, open(sys.argv[1]))}
after = [json.loads(l) for l in open(sys.argv[2])]
ids = [r["trial"] for r in after]
assert len(ids) == len(set(ids)) == len(before), (len(ids), len(set(ids)), len(before))
rerun = [r["trial"] for r in after if before[r["trial"]]["state"] in ("done", "stopped") and r["starts"] != before[r["trial"]]["starts"]]
cont = [r["trial"] for r in after if before[r["trial"]]["state"] == "running"]
print(f"  after --resume: {len(after)} trials, each once; ended before the kill and run again: {rerun or 'none'}")
print(f"  running at the kill, continued from their checkpoints: {', '.join(cont) or 'none'}; states now: "
      + ", ".join(sorted({r['state'] for r in after})))
assert not rerun
PY
fi
