"""A tiny stand-in for gymnasium, for testing remote/gym_server.py where the
real package is not installed (envs/remote/remote_test.go puts it on PYTHONPATH).

It knows one environment, FakeWalk-v0: a walk on 0..size-1 starting at 0
with a Discrete(size) observation (one-hot once flattened) and actions
Discrete(3, start=-1) (step left, stay, step right). Reaching size-1 terminates with
reward 1 and info["is_success"] = True; episodes are cut after 10 steps.
"""

import random

from . import spaces

__version__ = "0.0-fake"


class _Spec(object):
    def __init__(self, id, max_episode_steps):
        self.id = id
        self.max_episode_steps = max_episode_steps


class FakeWalk(object):
    def __init__(self, size=5):
        self.size = int(size)
        self.observation_space = spaces.Discrete(self.size)
        self.action_space = spaces.Discrete(3, start=-1)
        self.spec = _Spec("FakeWalk-v0", 10)
        self.rng = random.Random()
        self.pos = 0
        self.t = 0

    def reset(self, seed=None, options=None):
        if seed is not None:
            self.rng = random.Random(seed)
        self.pos, self.t = 0, 0
        return self.pos, {}

    def step(self, action):
        if action not in (-1, 0, 1):
            raise ValueError("FakeWalk action must be -1, 0 or +1, got %r" % (action,))
        self.pos = min(max(self.pos + action, 0), self.size - 1)
        self.t += 1
        terminated = self.pos == self.size - 1
        truncated = self.t >= 10 and not terminated
        return self.pos, (1.0 if terminated else 0.0), terminated, truncated, {"is_success": terminated}

    def close(self):
        pass


def make(id, **kwargs):
    if id != "FakeWalk-v0":
        raise ValueError("fake gymnasium only has FakeWalk-v0, not %r" % (id,))
    return FakeWalk(**kwargs)
