#!/usr/bin/env python3
"""An environment written as rLLM writes them (its BaseEnv's shape: a static
from_dict, reset() without the task, dict observations), served unchanged by
remote/textenv.py, for envs/remote's tests.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import textenv  # noqa: E402


class Doubler(object):
    """Answer twice the number: one turn, reward 1 for the right answer."""

    def __init__(self, task):
        self.task = task

    @staticmethod
    def from_dict(info):
        return Doubler(dict(info))

    def reset(self):
        return {"question": "Double %d." % self.task["n"]}, {"n": self.task["n"]}

    def step(self, action):
        right = action.strip() == str(2 * self.task["n"])
        return None, 1.0 if right else 0.0, True, {"right": right}

    def close(self):
        pass


if __name__ == "__main__":
    textenv.serve(Doubler)
