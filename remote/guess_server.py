#!/usr/bin/env python3
"""Guess the number: a multi-turn text environment served to agenttrainer.

An example of remote/textenv.py (standard library only). A task row is
{"secret": 37, "low": 1, "high": 100}; the agent answers with a number and
hears "higher", "lower" or "correct", with reward 1 when it names the
secret within max_turns guesses (the episode then ends with an empty
observation, which the single_turn agent reads as the score of its answer) (a binary search needs
ceil(log2(high - low + 1))). An answer without a number costs a turn.

    python3 remote/guess_server.py                            # stdin/stdout
    python3 remote/guess_server.py --listen 127.0.0.1:5555    # TCP

and in the trainer's config:

    [env]
    id = "remote-text"
    args = { command = ["python3", "remote/guess_server.py"] }

--step-delay S makes every step take S seconds longer (a slow verifier).
"""

import argparse
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import textenv  # noqa: E402

_NUMBER = re.compile(r"-?\d+")


class GuessNumber(textenv.TextEnv):
    """Find the secret number in [low, high]."""

    env_name = "GuessNumber"
    max_turns = 10
    step_delay = 0.0  # --step-delay

    @classmethod
    def from_dict(cls, task):
        low, high = int(task.get("low", 1)), int(task.get("high", 100))
        if "secret" not in task:
            raise KeyError("a GuessNumber task needs its secret (and low, high: 1 and 100 by default)")
        secret = int(task["secret"])
        if not low <= secret <= high:
            raise ValueError("the secret %d is outside [%d, %d]" % (secret, low, high))
        return cls(low, high, secret)

    def __init__(self, low, high, secret):
        self.low, self.high, self.secret = low, high, secret
        self.guesses = 0
        self.solved = False

    def reset(self, task):
        self.guesses, self.solved = 0, False
        question = ("I am thinking of a whole number from %d to %d. Guess it: answer with one number. "
                    "I will say whether the secret is higher or lower." % (self.low, self.high))
        return question, {"low": self.low, "high": self.high}

    def step(self, action):
        if self.step_delay:
            time.sleep(self.step_delay)
        self.guesses += 1
        found = _NUMBER.findall(action)
        if not found:
            return "Answer with a whole number from %d to %d." % (self.low, self.high), 0.0, False, {"valid": False}
        guess = int(found[-1])
        info = {"valid": True, "guess": guess, "guesses": self.guesses}
        if guess == self.secret:
            # The episode ends without a new observation: rLLM's math agent
            # (single_turn) scores its last answer only when the final
            # observation is empty; a text would start a turn of its own.
            self.solved = True
            return "", 1.0, True, info
        return ("Higher." if guess < self.secret else "Lower."), 0.0, False, info

    def succeeded(self):
        return self.solved


def main():
    parser = argparse.ArgumentParser(description="Serve the guess-the-number text environment to agenttrainer.")
    parser.add_argument("--step-delay", type=float, default=0.0, help="seconds every step sleeps (a slow verifier)")
    textenv.add_text_server_args(parser)
    args = parser.parse_args()
    GuessNumber.step_delay = args.step_delay
    textenv.serve_args(GuessNumber, args)


if __name__ == "__main__":
    main()
