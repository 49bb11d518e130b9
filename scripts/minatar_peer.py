#!/usr/bin/env python3
"""A PyTorch CPU peer for agenttrainer's MinAtar PPO: the same algorithm
(CleanRL ppo.py's, as trainer/ppo.go runs it), network and hyperparameters
as the MinAtar preset (trainer/config/presets.toml), on MinAtar 1.0.15's own
Python environments (sticky actions 0.1 and difficulty ramping unless told
otherwise; the minimal action set, as MinAtar/<Game>-v1), stepped one by one
as MinAtar offers them. Two uses:

Learning: train for --total-steps and write DIR/metrics.jsonl with
agenttrainer's field names (step, ep_return_mean over the last 100 episodes,
entropy, approx_kl, ...), so that `agenttrainer plot DIR ours/` and
scripts/learning-report.sh's table read it beside an agenttrainer run:

    PYTHONPATH=/path/to/MinAtar scripts/minatar_peer.py --game breakout \\
        --total-steps 2000000 --seed 1 --out /tmp/peer-breakout-s1

Speed: --iterations N times N whole iterations (rollout and update) after
one warm-up iteration and prints env steps/s, for comparing with

    agenttrainer train env.id=MinAtar/Breakout-v1 ppo.total_timesteps=N

The peer is measured on its best kernels. It prints which BLAS (and which
of its kernels) and which oneDNN code torch runs on (threadpoolctl, oneDNN's
verbose log), and re-runs itself, for this command only: without
OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE when they are set (some machines set
them to work around old OpenBLAS bugs; they slow a current one;
--keep-openblas-env keeps them), and on Debian's OpenBLAS (or BLIS) when
torch would load the reference BLAS, which Debian's torch (BLAS_INFO=generic)
does where libblas.so.3 is the reference one: its products are then about
10× slower (--reference-blas keeps it). --threads 0 (the default) times
each thread count from 1 to the number of CPUs for two iterations and keeps
the faster, with OpenBLAS's own thread pool set to the same count.

Needs python3-torch, python3-numpy, python3-threadpoolctl and
libopenblas0-pthread (Debian), and
MinAtar's source on PYTHONPATH (`git clone https://github.com/kenjyoung/MinAtar`).
"""
import argparse
import json
import math
import os
import subprocess
import sys
import time
from collections import deque

import numpy as np
import torch
import torch.nn as nn

OPENBLAS_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--game", default="breakout", help="MinAtar module: asterix, breakout, freeway, seaquest, space_invaders")
    p.add_argument("--seed", type=int, default=1, help="env i is seeded seed+i (as trainer.seed); also torch's seed")
    p.add_argument("--total-steps", type=int, default=0, help="train for this many env steps (0: speed mode, --iterations)")
    p.add_argument("--stop-after", type=int, default=0, help="stop once this many steps are done (the learning rate still anneals over --total-steps)")
    p.add_argument("--iterations", type=int, default=5, help="speed mode: iterations timed after one warm-up")
    p.add_argument("--out", default="", help="learning mode: directory for metrics.jsonl")
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: time 1..nproc and keep the faster)")
    p.add_argument("--keep-openblas-env", action="store_true", help="keep OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE if set")
    p.add_argument("--reference-blas", action="store_true", help="keep the reference BLAS where the system has it")
    # The protocol.
    p.add_argument("--sticky", type=float, default=0.1, help="sticky action probability (MinAtar's 0.1)")
    p.add_argument("--no-ramping", action="store_true", help="turn difficulty ramping off")
    p.add_argument("--all-actions", action="store_true", help="all six actions (-v0) instead of the minimal set (-v1)")
    # PPO, the MinAtar preset's values.
    p.add_argument("--envs", type=int, default=64)
    p.add_argument("--steps", type=int, default=128)
    p.add_argument("--lr", type=float, default=5e-3)
    p.add_argument("--anneal-lr", action=argparse.BooleanOptionalAction, default=True,
                   help="anneal the learning rate linearly to 0 over --total-steps")
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--minibatches", type=int, default=8)
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--gae-lambda", type=float, default=0.95)
    p.add_argument("--clip", type=float, default=0.2)
    p.add_argument("--no-clip-vloss", action="store_true")
    p.add_argument("--no-norm-adv", action="store_true")
    p.add_argument("--ent-coef", type=float, default=0.01)
    p.add_argument("--vf-coef", type=float, default=0.5)
    p.add_argument("--max-grad-norm", type=float, default=0.5)
    p.add_argument("--conv", default="16,3,1", help="out_channels,kernel,stride[,padding] (agent.conv's one layer)")
    p.add_argument("--hidden", type=int, default=128, help="the torso's hidden layer (agent.hidden)")
    return p.parse_args()


# Debian's optimised BLAS builds, each a directory holding a libblas.so.3 that
# can stand in for the reference BLAS torch links (BLAS_INFO=generic).
FAST_BLAS_DIRS = ["/usr/lib/x86_64-linux-gnu/" + d for d in
                  ("openblas-pthread", "openblas-openmp", "blis-pthread", "blis-openmp")]


def loaded_blas():
    """The real path of the BLAS library this process has mapped."""
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            name = os.path.basename(path)
            if name.startswith(("libblas", "libopenblas", "libblis", "libmkl_rt", "libflexiblas")):
                return os.path.realpath(path)
    return ""


def reexec_at_best(a):
    """Runs this command again, once, on the best kernels the machine has:
    without the OpenBLAS overrides, and on an optimised BLAS where torch
    would load the reference one (the system's choice is left alone)."""
    if os.environ.get("MINATAR_PEER_REEXEC"):
        return
    env = dict(os.environ, MINATAR_PEER_REEXEC="1")
    why = []
    found = [v for v in OPENBLAS_VARS if v in os.environ]
    if found and not a.keep_openblas_env:
        why.append("unset " + ", ".join(f"{v}={env.pop(v)}" for v in found))
    blas = loaded_blas()
    if "/blas/" in blas and not a.reference_blas:  # Debian's reference BLAS
        fast = next((d for d in FAST_BLAS_DIRS if os.path.exists(d + "/libblas.so.3")), None)
        if fast:
            env["LD_LIBRARY_PATH"] = fast + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
            why.append(f"torch would run on the reference BLAS ({blas}): LD_LIBRARY_PATH={fast}")
        else:
            print(f"warning: torch runs on the reference BLAS ({blas}), the slowest there is; "
                  "apt install libopenblas0-pthread gives it an optimised one", file=sys.stderr)
    if why:
        print("re-running on the best kernels: " + "; ".join(why) + " (for this command only)", file=sys.stderr, flush=True)
        os.execve(sys.executable, [sys.executable] + sys.argv, env)


def onednn_isa():
    """What oneDNN runs a minibatch's convolution with: its ISA line and the
    implementation it picks, from its verbose log in a child process."""
    code = ("import torch; x = torch.zeros(1024, 4, 10, 10); "
            "torch.nn.functional.conv2d(x, torch.zeros(16, 4, 3, 3))")
    env = dict(os.environ, ONEDNN_VERBOSE="1", DNNL_VERBOSE="1", MINATAR_PEER_REEXEC="1")
    try:
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120).stdout
    except (OSError, subprocess.SubprocessError) as e:
        return f"oneDNN: not probed ({e})"
    isa = next((l.split("isa:", 1)[1].strip() for l in out.splitlines() if "isa:" in l), "")
    conv = next((l.split(",")[4] for l in out.splitlines() if ",exec," in l and "convolution" in l and len(l.split(",")) > 4), "")
    if not isa and not conv:
        return "oneDNN: not used for the convolution"
    return f"oneDNN {isa or '?'}, convolution by {conv or '?'}"


def kernels():
    """One line naming the BLAS (and its kernels) and oneDNN torch runs on."""
    parts = []
    try:
        from threadpoolctl import threadpool_info
        libs = [l for l in threadpool_info() if l.get("user_api") == "blas"]
        for lib in libs:
            arch = lib.get("architecture")
            parts.append(f"{lib.get('internal_api')} {lib.get('version')}"
                         + (f" ({arch} kernels)" if arch else "")
                         + f", {lib.get('num_threads')} threads, {lib.get('filepath')}")
        if not libs:
            parts.append(f"BLAS {loaded_blas() or 'unknown'} (threadpoolctl knows it not: the reference BLAS?)")
    except ImportError:
        parts.append(f"BLAS {loaded_blas() or 'unknown'} (apt install python3-threadpoolctl to name its kernels)")
    parts.append(onednn_isa() if torch.backends.mkldnn.is_available() else "no oneDNN")
    return "; ".join(parts)


def set_threads(n):
    """torch's threads, and the BLAS's own pool (OpenBLAS's pthreads) to match."""
    torch.set_num_threads(n)
    try:
        from threadpoolctl import threadpool_limits
        threadpool_limits(limits=n, user_api="blas")
    except ImportError:
        pass


class Net(nn.Module):
    """The cnn agent (agents/cnn.go): one convolution with ReLU, a hidden
    layer with ReLU, shared by a policy head and a value head; CleanRL's
    Atari initialisation (orthogonal, gain √2; 0.01 policy; 1 value)."""

    def __init__(self, channels, actions, conv, hidden):
        super().__init__()
        out, k, s = conv[:3]
        pad = conv[3] if len(conv) > 3 else 0
        side = (10 + 2 * pad - k) // s + 1
        self.torso = nn.Sequential(nn.Conv2d(channels, out, k, s, pad), nn.ReLU(), nn.Flatten(),
                                   nn.Linear(out * side * side, hidden), nn.ReLU())
        self.actor = nn.Linear(hidden, actions)
        self.critic = nn.Linear(hidden, 1)
        for m, gain in ((self.torso[0], math.sqrt(2)), (self.torso[3], math.sqrt(2)), (self.actor, 0.01), (self.critic, 1.0)):
            nn.init.orthogonal_(m.weight, gain)
            nn.init.zeros_(m.bias)

    def forward(self, x):  # x: (B, 10, 10, C), channel-last as MinAtar gives it
        h = self.torso(x.permute(0, 3, 1, 2))
        return self.actor(h), self.critic(h).squeeze(-1)


class Envs:
    """num MinAtar environments; env i seeded seed+i, reset when done."""

    def __init__(self, a):
        from minatar import Environment
        self.envs = [Environment(a.game, sticky_action_prob=a.sticky, difficulty_ramping=not a.no_ramping)
                     for _ in range(a.envs)]
        for i, e in enumerate(self.envs):
            e.seed(a.seed + i)
            e.reset()
        e0 = self.envs[0]
        self.actions = list(range(6)) if a.all_actions else list(e0.minimal_action_set())
        self.shape = tuple(e0.state_shape())
        self.obs = np.stack([e.state() for e in self.envs]).astype(np.float32)
        self.ep_ret = np.zeros(a.envs)
        self.ep_len = np.zeros(a.envs, dtype=np.int64)
        self.finished = deque(maxlen=100)  # (return, length) of the last 100 episodes
        self.episodes = 0

    def step(self, acts, rew, done):
        for i, e in enumerate(self.envs):
            r, d = e.act(self.actions[acts[i]])
            rew[i], done[i] = r, d
            self.ep_ret[i] += r
            self.ep_len[i] += 1
            if d:
                self.finished.append((self.ep_ret[i], self.ep_len[i]))
                self.episodes += 1
                self.ep_ret[i], self.ep_len[i] = 0, 0
                e.reset()
            self.obs[i] = e.state()


class PPO:
    def __init__(self, a, envs):
        self.a, self.envs = a, envs
        torch.manual_seed(a.seed)
        conv = [int(v) for v in a.conv.split(",")]
        self.net = Net(envs.shape[2], len(envs.actions), conv, a.hidden)
        self.opt = torch.optim.Adam(self.net.parameters(), lr=a.lr, eps=1e-5)
        T, N = a.steps, a.envs
        self.obs = torch.zeros((T, N) + envs.shape)
        self.act = torch.zeros((T, N), dtype=torch.long)
        self.logp, self.rew, self.done, self.val = (torch.zeros((T, N)) for _ in range(4))
        self.rew_np, self.done_np = np.zeros(N, dtype=np.float32), np.zeros(N, dtype=np.float32)

    def rollout(self):
        a, envs = self.a, self.envs
        for t in range(a.steps):
            o = torch.from_numpy(envs.obs)
            with torch.no_grad():
                logits, v = self.net(o)
                dist = torch.distributions.Categorical(logits=logits)
                act = dist.sample()
            self.obs[t], self.act[t], self.logp[t], self.val[t] = o, act, dist.log_prob(act), v
            envs.step(act.numpy(), self.rew_np, self.done_np)
            self.rew[t], self.done[t] = torch.from_numpy(self.rew_np), torch.from_numpy(self.done_np)
        with torch.no_grad():
            _, next_v = self.net(torch.from_numpy(envs.obs))
        # GAE; done[t] = 1: step t ended its episode, nothing flows back across it.
        adv = torch.zeros_like(self.rew)
        last = torch.zeros(a.envs)
        for t in reversed(range(a.steps)):
            nv = next_v if t == a.steps - 1 else self.val[t + 1]
            nonterm = 1.0 - self.done[t]
            delta = self.rew[t] + a.gamma * nv * nonterm - self.val[t]
            last = delta + a.gamma * a.gae_lambda * nonterm * last
            adv[t] = last
        return adv, adv + self.val

    def update(self, adv, ret, lr):
        a = self.a
        for g in self.opt.param_groups:
            g["lr"] = lr
        n = a.steps * a.envs
        flat = lambda x: x.reshape((n,) + x.shape[2:])
        fo, fa, fl, fv, fadv, fret = map(flat, (self.obs, self.act, self.logp, self.val, adv, ret))
        mb = n // a.minibatches
        sums = np.zeros(6)  # policy loss, value loss, entropy, approx kl, clipfrac, grad norm
        for _ in range(a.epochs):
            perm = torch.randperm(n)
            for k in range(a.minibatches):
                idx = perm[k * mb:(k + 1) * mb]
                logits, v = self.net(fo[idx])
                dist = torch.distributions.Categorical(logits=logits)
                logratio = dist.log_prob(fa[idx]) - fl[idx]
                ratio = logratio.exp()
                ad = fadv[idx]
                if not a.no_norm_adv:
                    ad = (ad - ad.mean()) / (ad.std() + 1e-8)
                pg = torch.max(-ad * ratio, -ad * ratio.clamp(1 - a.clip, 1 + a.clip)).mean()
                if a.no_clip_vloss:
                    vl = 0.5 * ((v - fret[idx]) ** 2).mean()
                else:
                    vc = fv[idx] + (v - fv[idx]).clamp(-a.clip, a.clip)
                    vl = 0.5 * torch.max((v - fret[idx]) ** 2, (vc - fret[idx]) ** 2).mean()
                ent = dist.entropy().mean()
                loss = pg - a.ent_coef * ent + a.vf_coef * vl
                self.opt.zero_grad()
                loss.backward()
                gn = nn.utils.clip_grad_norm_(self.net.parameters(), a.max_grad_norm)
                self.opt.step()
                with torch.no_grad():
                    kl = ((ratio - 1) - logratio).mean()
                    cf = ((ratio - 1).abs() > a.clip).float().mean()
                sums += [pg.item(), vl.item(), ent.item(), kl.item(), cf.item(), gn.item()]
        return sums / (a.epochs * a.minibatches)

    def iteration(self, lr):
        t0 = time.perf_counter()
        adv, ret = self.rollout()
        t1 = time.perf_counter()
        stats = self.update(adv, ret, lr)
        t2 = time.perf_counter()
        y, v = ret.flatten(), self.val.flatten()
        var = y.var().item()
        ev = float("nan") if var == 0 else 1 - (y - v).var().item() / var
        return t1 - t0, t2 - t1, stats, ev


def pick_threads(a):
    """Times two iterations at each thread count and returns the faster."""
    best, best_sps = 1, 0.0
    for n in range(1, (os.cpu_count() or 1) + 1):
        set_threads(n)
        ppo = PPO(a, Envs(a))
        ppo.iteration(a.lr)  # warm-up
        t = time.perf_counter()
        for _ in range(2):
            ppo.iteration(a.lr)
        sps = 2 * a.steps * a.envs / (time.perf_counter() - t)
        print(f"  {n} thread(s): {sps:,.0f} steps/s", flush=True)
        if sps > best_sps:
            best, best_sps = n, sps
    return best


def speed(a):
    ppo = PPO(a, Envs(a))
    ppo.iteration(a.lr)  # warm-up
    rollout_s = update_s = 0.0
    start = time.perf_counter()
    for _ in range(a.iterations):
        r, u, _, _ = ppo.iteration(a.lr)
        rollout_s, update_s = rollout_s + r, update_s + u
    total = time.perf_counter() - start
    steps = a.iterations * a.steps * a.envs
    print(f"pytorch {torch.__version__} ({torch.get_num_threads()} threads), MinAtar {a.game}: "
          f"{steps} steps in {total:.1f} s = {steps / total:,.0f} steps/s "
          f"(rollout {rollout_s / total:.0%}, update {update_s / total:.0%})")


def learn(a):
    if not a.out:
        sys.exit("--total-steps needs --out DIR for metrics.jsonl")
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "peer-args.json"), "w") as f:
        json.dump(vars(a), f, indent=1)
    envs = Envs(a)
    ppo = PPO(a, envs)
    batch = a.steps * a.envs
    iters = max(1, a.total_steps // batch)
    start = time.perf_counter()
    path = os.path.join(a.out, "metrics.jsonl")
    with open(path, "w") as f:  # a row per iteration, as agenttrainer appends them
        for it in range(1, iters + 1):
            lr = a.lr * (1 - (it - 1) / iters) if a.anneal_lr else a.lr
            r, u, s, ev = ppo.iteration(lr)
            el = time.perf_counter() - start
            step = it * batch
            fin = list(envs.finished)
            row = {"iter": it, "step": step, "time_s": el, "sps": step / el, "episodes": envs.episodes}
            if fin:
                rets = [x[0] for x in fin]
                row.update(ep_return_mean=float(np.mean(rets)), ep_return_min=float(min(rets)),
                           ep_return_max=float(max(rets)), ep_length_mean=float(np.mean([x[1] for x in fin])))
            row.update(policy_loss=s[0], value_loss=s[1], entropy=s[2], approx_kl=s[3], clipfrac=s[4],
                       explained_variance=ev, lr=lr, grad_norm=s[5], rollout_s=r, update_s=u)
            f.write(json.dumps(row) + "\n")
            f.flush()
            if a.stop_after and step >= a.stop_after:
                break
            if it % 25 == 0 or it == iters:
                print(f"step {step:>9d}  return {row.get('ep_return_mean', float('nan')):7.2f}  "
                      f"entropy {s[2]:.3f}  {row['sps']:,.0f} steps/s", flush=True)


def main():
    a = parse_args()
    reexec_at_best(a)
    if a.threads == 0:
        print("timing thread counts:", flush=True)
        a.threads = pick_threads(a)
    set_threads(a.threads)
    print(f"pytorch {torch.__version__}, {torch.get_num_threads()} threads; {kernels()}", flush=True)
    if a.total_steps:
        learn(a)
    else:
        speed(a)


if __name__ == "__main__":
    main()
