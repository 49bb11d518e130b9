#!/usr/bin/env python3
"""A pure-Python CartPole-v1 served over the agenttrainer remote protocol.

No third-party packages: the physics is Gymnasium 0.29.1's CartPole-v1
(Euler integration, the same association order; NumPy's x**2 is x*x)
written with the math module, with its TimeLimit of 500 steps. Resets draw each state variable
uniformly from [-0.05, 0.05) with random.Random(seed) (not NumPy's stream, so
episodes differ from Gymnasium's for the same seed; the dynamics are the
same). The Go tests train and fuzz against it.

    python3 remote/cartpole_server.py                      # stdin/stdout
    python3 remote/cartpole_server.py --listen 127.0.0.1:5555

Extra messages for tests: set_state (start fresh episodes from given
states) and get_state (the float64 state of every sub-environment).
"""

import argparse
import math
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import protocol  # noqa: E402

GRAVITY = 9.8
MASSCART = 1.0
MASSPOLE = 0.1
TOTAL_MASS = MASSPOLE + MASSCART
LENGTH = 0.5  # half the pole's length
POLEMASS_LENGTH = MASSPOLE * LENGTH
FORCE_MAG = 10.0
TAU = 0.02
THETA_THRESHOLD = 12 * 2 * math.pi / 360
X_THRESHOLD = 2.4
MAX_EPISODE_STEPS = 500
F32_MAX = 3.4028234663852886e38


class CartPoleBatch(object):
    """N CartPole-v1 sub-environments with auto-reset."""

    env_name = "CartPole-v1 (pure Python)"
    max_episode_steps = MAX_EPISODE_STEPS
    reports_success = False

    def __init__(self, num_envs, options, env_offset=0):
        self.num_envs = num_envs
        self.max_steps = int(options.get("max_episode_steps", MAX_EPISODE_STEPS))
        self.observation_space = protocol.box_space(
            4,
            [-X_THRESHOLD * 2, -F32_MAX, -THETA_THRESHOLD * 2, -F32_MAX],
            [X_THRESHOLD * 2, F32_MAX, THETA_THRESHOLD * 2, F32_MAX])
        self.action_space = protocol.discrete_space(2)
        # Sub-environment i of all the trainer's workers starts with the
        # stream of random.Random(i), whichever worker holds it.
        self.rngs = [random.Random(env_offset + i) for i in range(num_envs)]
        self.states = [[0.0, 0.0, 0.0, 0.0] for _ in range(num_envs)]
        self.elapsed = [0] * num_envs
        self.beyond = [None] * num_envs  # steps_beyond_terminated

    def _reset_one(self, i, seed=None):
        if seed is not None:
            self.rngs[i] = random.Random(seed)
        u = self.rngs[i].uniform
        self.states[i] = [u(-0.05, 0.05), u(-0.05, 0.05), u(-0.05, 0.05), u(-0.05, 0.05)]
        self.elapsed[i] = 0
        self.beyond[i] = None

    def reset(self, seed):
        for i in range(self.num_envs):
            self._reset_one(i, None if seed is None else seed + i)
        return [v for s in self.states for v in s]

    def step(self, actions):
        sin, cos = math.sin, math.cos
        n = self.num_envs
        obs = []
        rewards = [0.0] * n
        terminated = [False] * n
        truncated = [False] * n
        final_obs = {}
        for i in range(n):
            x, x_dot, theta, theta_dot = self.states[i]
            force = FORCE_MAG if actions[i] == 1 else -FORCE_MAG
            costheta = cos(theta)
            sintheta = sin(theta)
            temp = (force + POLEMASS_LENGTH * (theta_dot * theta_dot) * sintheta) / TOTAL_MASS
            thetaacc = (GRAVITY * sintheta - costheta * temp) / (
                LENGTH * (4.0 / 3.0 - MASSPOLE * (costheta * costheta) / TOTAL_MASS))
            xacc = temp - POLEMASS_LENGTH * thetaacc * costheta / TOTAL_MASS
            x = x + TAU * x_dot
            x_dot = x_dot + TAU * xacc
            theta = theta + TAU * theta_dot
            theta_dot = theta_dot + TAU * thetaacc
            state = [x, x_dot, theta, theta_dot]
            self.states[i] = state
            term = x < -X_THRESHOLD or x > X_THRESHOLD or theta < -THETA_THRESHOLD or theta > THETA_THRESHOLD
            if not term:
                reward = 1.0
            elif self.beyond[i] is None:
                self.beyond[i] = 0
                reward = 1.0
            else:
                self.beyond[i] += 1
                reward = 0.0
            self.elapsed[i] += 1
            trunc = self.elapsed[i] >= self.max_steps
            rewards[i] = reward
            if term or trunc:
                terminated[i] = term
                truncated[i] = trunc
                final_obs[i] = state
                self._reset_one(i)
                state = self.states[i]
            obs.extend(state)
        return protocol.StepResult(obs, rewards, terminated, truncated, final_obs)

    def handle(self, kind, header, payload):
        if kind == "set_state":
            states = header.get("states")
            if not isinstance(states, list) or len(states) != self.num_envs or any(
                    not isinstance(s, list) or len(s) != 4 for s in states):
                raise ValueError("set_state wants %d states of 4 numbers" % self.num_envs)
            for i, s in enumerate(states):
                self.states[i] = [float(v) for v in s]
                self.elapsed[i] = 0
                self.beyond[i] = None
            return {"type": "reset"}, protocol.f32_bytes([v for s in self.states for v in s])
        if kind == "get_state":
            return {"type": "state", "states": self.states}, b""
        raise protocol.UnknownMessage()

    def close(self):
        pass


def main():
    parser = argparse.ArgumentParser(description="Serve a pure-Python CartPole-v1 over the agenttrainer remote protocol.")
    protocol.add_server_args(parser)
    args = parser.parse_args()
    protocol.serve_main(CartPoleBatch, args, name="cartpole_server")


if __name__ == "__main__":
    main()
