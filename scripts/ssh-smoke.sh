#!/usr/bin/env bash
# The terminal app served over SSH, driven through the real binary and the
# OpenSSH client in tmux: `agenttrainer serve --ssh 127.0.0.1:PORT` with keys
# made here; two clients in two tmux windows; the first starts a run, the
# second finds it in the runs browser and attaches to it; both screens must
# show the run, and the second its step counter advancing. A third client
# with a key that is not listed must be refused. Fails with the screens
# when something is not as it should be; prints both screens when it passes.
#
#   scripts/ssh-smoke.sh [SCREENS_DIR]        (PORT=2222 picks the port; default: a free one)
set -euo pipefail
cd "$(dirname "$0")/.."
script=ssh-smoke session="at-ssh-$$"
. scripts/lib.sh
need tmux go ssh ssh-keygen # ssh, ssh-keygen: apt-get install openssh-client
work=$(mktemp -d)
shots=${1:-$work/screens}
mkdir -p "$shots"
serve_pid=""
at="$work/agenttrainer"
cleanup() {
  tmux kill-session -t "$session" 2>/dev/null || true
  if [ -n "$serve_pid" ]; then kill "$serve_pid" 2>/dev/null || true; wait "$serve_pid" 2>/dev/null || true; fi
  stop_trainings "$at" "$work/runs" # the trainings this script started
  rm -rf "$work"
}
trap cleanup EXIT
go build -o "$at" .

fail() {
  echo "ssh-smoke: FAIL: $*" >&2
  for w in a b; do echo "--- window $w:" >&2; screen "$w" >&2 2>/dev/null || true; done
  echo "--- server log:" >&2; cat "$work/serve.err" >&2 || true
  exit 1
}
keys() { local w=$1; shift; for k in "$@"; do tmux send-keys -t "$session:$w" "$k"; sleep 0.3; done; }

# Keys: one listed in authorized_keys, one not; the server's host key is
# made on first start, and the clients check it.
ssh-keygen -q -t ed25519 -N "" -C viewer@smoke -f "$work/viewer"
ssh-keygen -q -t ed25519 -N "" -C stranger@smoke -f "$work/stranger"
cp "$work/viewer.pub" "$work/authorized_keys"
chmod 600 "$work/authorized_keys"

# 1. The server, on loopback; runs last long enough to watch.
"$at" serve --ssh "127.0.0.1:${PORT:-0}" --authorized-keys "$work/authorized_keys" --host-key "$work/host/ssh_host_ed25519" \
  --runs-dir "$work/runs" ppo.total_timesteps=50000000 >"$work/serve.out" 2>"$work/serve.err" &
serve_pid=$!
for _ in $(seq 100); do grep -q "over SSH on" "$work/serve.out" 2>/dev/null && break; sleep 0.1; done
port=$(sed -n 's/.*over SSH on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/serve.out")
[ -n "$port" ] || fail "the server did not start: $(cat "$work/serve.out" "$work/serve.err")"
echo "[127.0.0.1]:$port $(cat "$work/host/ssh_host_ed25519.pub")" >"$work/known_hosts"
client() { # key → an ssh command line that checks the host key and uses only that key
  echo "ssh -F /dev/null -p $port -i $work/$1 -o IdentitiesOnly=yes -o IdentityAgent=none -o UserKnownHostsFile=$work/known_hosts -o StrictHostKeyChecking=yes viewer@127.0.0.1"
}

# 2. Two clients in two windows.
tmux new-session -d -s "$session" -n a -x 120 -y 40 "$(client viewer); sleep 600"
tmux new-window -d -t "$session" -n b "$(client viewer); sleep 600"
wait_for "Pick an environment" 20 a
wait_for "Pick an environment" 20 b

# 3. The first starts a run.
keys a s
wait_for "● running" 30 a
run=$(screen a | sed -n 's/^run \(.*\)$/\1/p' | head -1 | awk '{print $1}')
[ -n "$run" ] || fail "window a does not show its run directory"
name=$(basename "$run")

# 4. The second finds it in the runs browser, marked live, and attaches.
keys b 4
wait_for "training now" 15 b
screen b | grep -F "$name" | grep -qF "◆" || fail "the runs browser does not mark $name as training"
keys b a
wait_for "● running" 15 b
wait_for "$name" 10 b

# 5. Both screens show the run; the second's counter moves.
for w in a b; do
  screen "$w" | grep -qF "CartPole-v1 · mlp" || fail "window $w does not show the run's environment"
  screen "$w" | grep -qF "$name" || fail "window $w does not show run $name"
done
first=$(step_now b)
sleep 3
second=$(step_now b)
((first > 0 && second > first)) || fail "window b's step counter did not advance ($first → $second)"
screen a >"$shots/a-started-the-run.txt"
screen b >"$shots/b-attached-from-runs-browser.txt"

# 6. An unlisted key is refused.
if out=$($(client stranger) -o BatchMode=yes -T 2>&1 </dev/null); then fail "the unlisted key got in: $out"; fi
grep -qF "Permission denied (publickey)" <<<"$out" || fail "the unlisted key was not refused as expected: $out"
grep -qF "refused viewer@127.0.0.1" "$work/serve.err" || fail "the refusal is not in the server log"

# 7. Stop the run from the second window; both see it end. (A viewer may
# miss the run's last event: the training closes its control socket without
# letting every subscriber's queue drain, and the app then says it "lost the
# training". That is reported as a note, not a failure of this script.)
keys b x y
for w in a b; do
  deadline=$((SECONDS + 30))
  until screen "$w" | grep -qE "■ stopped|lost the training"; do
    ((SECONDS <= deadline)) || fail "window $w never showed the run end"
    sleep 0.2
  done
  screen "$w" | grep -qF "■ stopped" || echo "ssh-smoke: NOTE: window $w missed the run's last event (\"lost the training\")"
done
keys a q
keys b q
kill "$serve_pid"
wait "$serve_pid" || fail "the server did not stop cleanly"
serve_pid=""

echo "=== window a (started the run):"
cat "$shots/a-started-the-run.txt"
echo "=== window b (attached from the runs browser):"
cat "$shots/b-attached-from-runs-browser.txt"
echo "=== server log:"
cat "$work/serve.err"
echo "ssh-smoke: OK: two SSH clients watched run $name; an unlisted key was refused"
