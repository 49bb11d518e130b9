#!/usr/bin/env python3
"""An environment whose step costs a fixed time: for measuring how env
workers scale (agenttrainer's env.args.workers against Gymnasium's
AsyncVectorEnv and SB3's SubprocVecEnv, scripts/env-scaling.sh).

Each step sleeps --sleep-ms (I/O-like: a simulator on another machine, a
verifier call) or spins the CPU for --spin-ms (CPU-bound), then returns a
counter observation; episodes last 200 steps. Two ways to use it:

    python3 scripts/sleepenv.py --sleep-ms 1          # an agenttrainer remote server (stdio; --listen for TCP)
    gymnasium.make("sleepenv:Sleep-v0", sleep_ms=1)    # a Gymnasium env (with scripts/ on PYTHONPATH)

and remote/gym_server.py --env sleepenv:Sleep-v0 serves the Gymnasium one.
"""

import os
import sys
import time

EPISODE = 200


def burn(sleep_s, spin_s):
    if sleep_s > 0:
        time.sleep(sleep_s)
    if spin_s > 0:
        end = time.perf_counter() + spin_s
        x = 0
        while time.perf_counter() < end:
            for i in range(100):
                x += i * i
    return 0


try:
    import gymnasium
    import numpy as np

    class SleepEnv(gymnasium.Env):
        """The Gymnasium form: Box(4) counters, Discrete(2) actions."""

        def __init__(self, sleep_ms=1.0, spin_ms=0.0):
            self.observation_space = gymnasium.spaces.Box(-1e6, 1e6, (4,), np.float32)
            self.action_space = gymnasium.spaces.Discrete(2)
            self.sleep_s, self.spin_s = sleep_ms / 1000.0, spin_ms / 1000.0
            self.t = 0

        def reset(self, seed=None, options=None):
            super().reset(seed=seed)
            self.t = 0
            return np.zeros(4, np.float32), {}

        def step(self, action):
            burn(self.sleep_s, self.spin_s)
            self.t += 1
            obs = np.array([self.t, action, 0, 1], np.float32)
            return obs, 1.0, False, self.t >= EPISODE, {}

    gymnasium.register(id="Sleep-v0", entry_point=SleepEnv)
except ImportError:  # served by protocol.py alone
    pass


class SleepBatch(object):
    """The remote-protocol form: N sub-environments stepped one after the other."""

    env_name = "sleepenv"
    max_episode_steps = EPISODE

    def __init__(self, num_envs, options, sleep_s, spin_s):
        import protocol
        self.protocol = protocol
        self.num_envs = num_envs
        self.observation_space = protocol.box_space(4)
        self.action_space = protocol.discrete_space(2)
        self.sleep_s, self.spin_s = sleep_s, spin_s
        self.t = [0] * num_envs

    def reset(self, seed):
        self.t = [0] * self.num_envs
        return [0.0] * (4 * self.num_envs)

    def step(self, actions):
        n = self.num_envs
        obs, trunc, final = [], [False] * n, {}
        for i in range(n):
            burn(self.sleep_s, self.spin_s)
            self.t[i] += 1
            o = [float(self.t[i]), float(actions[i]), 0.0, 1.0]
            if self.t[i] >= EPISODE:
                trunc[i], final[i] = True, o
                self.t[i] = 0
                o = [0.0, 0.0, 0.0, 0.0]
            obs.extend(o)
        return self.protocol.StepResult(obs, [1.0] * n, [False] * n, trunc, final)

    def close(self):
        pass


def main():
    import argparse
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "remote"))
    import protocol
    parser = argparse.ArgumentParser(description="A remote environment whose step sleeps or spins.")
    parser.add_argument("--sleep-ms", type=float, default=1.0)
    parser.add_argument("--spin-ms", type=float, default=0.0)
    protocol.add_server_args(parser)
    args = parser.parse_args()
    protocol.serve_main(lambda n, options: SleepBatch(n, options, args.sleep_ms / 1000.0, args.spin_ms / 1000.0), args, name="sleepenv")


if __name__ == "__main__":
    main()
