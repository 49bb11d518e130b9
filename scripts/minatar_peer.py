#!/usr/bin/env python3
"""A PyTorch CPU peer for MinAtar speed: PPO with the agenttrainer MinAtar
preset's network and batch (one 3×3 convolution of 16 channels, a hidden
layer of 128, actor and critic heads on it; 64 envs × 128 steps, 3 epochs of
8 minibatches), on MinAtar 1.0.15's own Python environments, stepped one by
one as MinAtar offers them. Prints env steps per second end to end (rollout
and update), and each phase's share, for comparing with

    agenttrainer train env.id=MinAtar/Breakout-v1 ppo.total_timesteps=N

Needs python3-torch and python3-numpy (apt), and MinAtar's source on
PYTHONPATH (`git clone https://github.com/kenjyoung/MinAtar`):

    PYTHONPATH=/path/to/MinAtar python3 scripts/minatar_peer.py --game breakout --iterations 5
"""
import argparse
import time

import numpy as np
import torch
import torch.nn as nn
from minatar import Environment


class Net(nn.Module):
    def __init__(self, channels, actions):
        super().__init__()
        self.torso = nn.Sequential(nn.Conv2d(channels, 16, 3, 1), nn.ReLU(), nn.Flatten(),
                                   nn.Linear(16 * 8 * 8, 128), nn.ReLU())
        self.actor = nn.Linear(128, actions)
        self.critic = nn.Linear(128, 1)

    def forward(self, x):  # x: (B, 10, 10, C), channel-last as MinAtar gives it
        h = self.torso(x.permute(0, 3, 1, 2))
        return self.actor(h), self.critic(h).squeeze(-1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--game", default="breakout")
    p.add_argument("--envs", type=int, default=64)
    p.add_argument("--steps", type=int, default=128)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--minibatches", type=int, default=8)
    p.add_argument("--iterations", type=int, default=5)
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    a = p.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    envs = [Environment(a.game) for _ in range(a.envs)]
    for i, e in enumerate(envs):
        e.seed(i)
        e.reset()
    shape = envs[0].state_shape()
    n_actions = envs[0].num_actions()
    net = Net(shape[2], n_actions)
    opt = torch.optim.Adam(net.parameters(), lr=3e-4, eps=1e-5)
    obs = np.stack([e.state() for e in envs]).astype(np.float32)
    N, T = a.envs, a.steps
    b_obs = torch.zeros((T, N) + tuple(shape))
    b_act = torch.zeros((T, N), dtype=torch.long)
    b_logp, b_rew, b_done, b_val = (torch.zeros((T, N)) for _ in range(4))
    rollout_s = update_s = 0.0
    start = time.perf_counter()
    for it in range(a.iterations):
        t0 = time.perf_counter()
        for t in range(T):
            o = torch.from_numpy(obs)
            with torch.no_grad():
                logits, v = net(o)
                dist = torch.distributions.Categorical(logits=logits)
                act = dist.sample()
            b_obs[t], b_act[t], b_logp[t], b_val[t] = o, act, dist.log_prob(act), v
            acts = act.numpy()
            for i, e in enumerate(envs):
                r, done = e.act(int(acts[i]))
                b_rew[t, i], b_done[t, i] = r, float(done)
                if done:
                    e.reset()
                obs[i] = e.state()
        with torch.no_grad():
            _, next_v = net(torch.from_numpy(obs))
        adv = torch.zeros((T, N))
        last = torch.zeros(N)
        for t in reversed(range(T)):
            nv = next_v if t == T - 1 else b_val[t + 1]
            nonterm = 1.0 - b_done[t]
            delta = b_rew[t] + 0.99 * nv * nonterm - b_val[t]
            last = delta + 0.99 * 0.95 * nonterm * last
            adv[t] = last
        ret = adv + b_val
        t1 = time.perf_counter()
        fo, fa, fl, fadv, fret = (x.reshape((T * N,) + x.shape[2:]) for x in (b_obs, b_act, b_logp, adv, ret))
        mb = T * N // a.minibatches
        for _ in range(a.epochs):
            perm = torch.randperm(T * N)
            for k in range(a.minibatches):
                idx = perm[k * mb:(k + 1) * mb]
                logits, v = net(fo[idx])
                dist = torch.distributions.Categorical(logits=logits)
                logp = dist.log_prob(fa[idx])
                ratio = (logp - fl[idx]).exp()
                ad = fadv[idx]
                ad = (ad - ad.mean()) / (ad.std() + 1e-8)
                pg = torch.max(-ad * ratio, -ad * ratio.clamp(0.8, 1.2)).mean()
                vl = 0.5 * ((v - fret[idx]) ** 2).mean()
                loss = pg - 0.01 * dist.entropy().mean() + 0.5 * vl
                opt.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(net.parameters(), 0.5)
                opt.step()
        t2 = time.perf_counter()
        rollout_s += t1 - t0
        update_s += t2 - t1
    total = time.perf_counter() - start
    steps = a.iterations * T * N
    print(f"pytorch {torch.__version__} ({torch.get_num_threads()} threads), MinAtar {a.game}: "
          f"{steps} steps in {total:.1f} s = {steps / total:,.0f} steps/s "
          f"(rollout {rollout_s / total:.0%}, update {update_s / total:.0%})")


if __name__ == "__main__":
    main()
