# Helpers shared by the scripts that drive the real binary in tmux. Source
# it after setting `script` (its name, for messages) and `session` (the tmux
# session); wait_for calls the script's own `fail MESSAGE`.

# need TOOL...: stop with a message when a tool is missing.
need() {
  local t
  for t in "$@"; do
    command -v "$t" >/dev/null || { echo "$script: needs $t" >&2; exit 1; }
  done
}

# screen [WINDOW]: the text of the session's pane (or of one window's).
screen() { tmux capture-pane -p -t "$session${1:+:$1}"; }

# wait_for TEXT [SECONDS] [WINDOW]: until the pane shows TEXT, else fail.
wait_for() {
  local deadline=$((SECONDS + ${2:-15}))
  until screen "${3:-}" 2>/dev/null | grep -qF -- "$1"; do
    ((SECONDS <= deadline)) || fail "${3:+window $3: }the screen never showed \"$1\""
    sleep 0.1
  done
}

# step_now [WINDOW]: the dashboard's step counter in steps (-1 if not shown).
step_now() {
  screen "${1:-}" | sed -n 's/.*│step  *\([0-9.]*\)\([kM]\{0,1\}\) of.*/\1 \2/p' | head -1 |
    awk 'NF { m = ($2 == "k") ? 1e3 : ($2 == "M") ? 1e6 : 1; printf "%d\n", $1 * m; exit } END { if (!NR) print -1 }'
}

# stop_trainings AGENTTRAINER RUNS_DIR: kill the background trainings that
# `ps` lists under RUNS_DIR.
stop_trainings() {
  [ -x "$1" ] || return 0
  "$1" ps --runs-dir "$2" 2>/dev/null | awk 'NR > 1 && $1 ~ /^[0-9]+$/ { print $1 }' |
    while read -r pid; do kill "$pid" 2>/dev/null || true; done
}

# fail MESSAGE: stop with the message and the screen as it is.
fail() {
  echo "$script: FAIL: $*" >&2
  screen >&2 || true
  exit 1
}

# expect TEXT: the pane shows TEXT now, else fail.
expect() { screen | grep -qF -- "$1" || fail "expected \"$1\" on the screen"; }

# keys KEY...: send tmux keys one by one; type_text TEXT: type it literally.
keys() { for k in "$@"; do tmux send-keys -t "$session" "$k"; sleep 0.15; done; }
type_text() { tmux send-keys -t "$session" -l "$1"; sleep 0.2; }

# app_command DIR [key=value...]: the command a tmux pane runs to open the
# app on the runs under DIR/runs — the binary itself, or, with VIA=ssh, the
# OpenSSH client logged into an `agenttrainer serve --ssh` started here for
# DIR (one server a DIR; keys made once; stop_serves stops them). Needs $at
# (the binary) and $work (a scratch directory).
app_command() {
  local dir=$1; shift
  if [ "${VIA:-local}" != ssh ]; then
    printf '%q ' "$at" "$@"
    return
  fi
  need ssh ssh-keygen
  local keys="$work/ssh"
  if [ ! -f "$keys/viewer" ]; then
    mkdir -p "$keys"
    ssh-keygen -q -t ed25519 -N "" -C viewer@script -f "$keys/viewer"
    cp "$keys/viewer.pub" "$keys/authorized_keys"
    chmod 600 "$keys/authorized_keys"
  fi
  (cd "$dir" && exec "$at" serve --ssh 127.0.0.1:0 --authorized-keys "$keys/authorized_keys" \
    --host-key "$keys/host/ssh_host_ed25519" --runs-dir runs "$@" >"$dir/serve.out" 2>"$dir/serve.err") &
  echo $! >>"$work/serve.pids"
  local port="" _
  for _ in $(seq 200); do
    port=$(sed -n 's/.*over SSH on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$dir/serve.out" 2>/dev/null)
    [ -n "$port" ] && break
    sleep 0.1
  done
  [ -n "$port" ] || fail "serve --ssh did not start: $(cat "$dir/serve.out" "$dir/serve.err")"
  echo "[127.0.0.1]:$port $(cat "$keys/host/ssh_host_ed25519.pub")" >>"$keys/known_hosts"
  echo "ssh -tt -F /dev/null -p $port -i $keys/viewer -o IdentitiesOnly=yes -o IdentityAgent=none -o UserKnownHostsFile=$keys/known_hosts -o StrictHostKeyChecking=yes viewer@127.0.0.1"
}

# stop_serves: stop the servers app_command started.
stop_serves() {
  [ -f "$work/serve.pids" ] || return 0
  while read -r pid; do kill "$pid" 2>/dev/null || true; done <"$work/serve.pids"
  rm -f "$work/serve.pids"
}
