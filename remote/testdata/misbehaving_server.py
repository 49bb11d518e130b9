#!/usr/bin/env python3
"""An environment server that misbehaves on purpose, for envs/remote/remote_test.go.

Its sub-environments count steps: observation [i, t], reward 1, episodes of
5 steps. --mode picks what goes wrong at step --at (1-based):

    ok            nothing
    crash         writes a line to stderr and exits with status 3
    hang          stops answering (sleeps)
    garbage       writes text instead of a frame onto the protocol stream
    error         raises ValueError in the environment
    nan           answers with a NaN observation
    twice         sends its reply to step --at twice (the client must notice
                  at the next step, whose reply then echoes an earlier id)
    noisy         prints to stdout (sys.stdout and fd 1) on every step; must still work
    exit-idle     answers step --at, then exits with status 4 before the next request
    startup-crash fails to import a module before serving
    slow-hello    takes an hour to build its environments

With several workers (env.args.workers), --only-offset K limits the
misbehaviour to the worker whose first sub-environment is K (the hello's
env_offset), and --once-file PATH to the first process that gets there (it
creates PATH): a restarted worker then behaves. Observations carry the
sub-environment's index among all workers'.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import protocol  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--mode", default="ok")
parser.add_argument("--at", type=int, default=3)
parser.add_argument("--only-offset", type=int, default=None)
parser.add_argument("--once-file", default=None)
protocol.add_server_args(parser)
args = parser.parse_args()

if args.mode == "startup-crash":
    import no_such_module_for_the_test  # noqa: F401

state = {"garbage": False, "twice": False, "exit": False}
_write = protocol.Channel.write


def write(self, header, payload=b""):
    if state["garbage"]:
        self.wfile.write(b"Traceback (most recent call last): something printed this\n")
        self.wfile.flush()
        return
    _write(self, header, payload)
    if state["twice"]:
        state["twice"] = False
        _write(self, header, payload)
    if state["exit"]:
        sys.stderr.write("exiting between requests on purpose\n")
        sys.stderr.flush()
        os._exit(4)


protocol.Channel.write = write


class Counter(object):
    env_name = "misbehaving"

    def __init__(self, num_envs, options, env_offset=0):
        self.mode = args.mode
        if args.only_offset is not None and env_offset != args.only_offset:
            self.mode = "ok"
        if self.mode == "slow-hello":
            time.sleep(3600)
        self.offset = env_offset
        self.num_envs = num_envs
        self.observation_space = protocol.box_space(2)
        self.action_space = protocol.discrete_space(2)
        self.t = [0] * num_envs
        self.steps = 0

    def obs(self):
        return [v for i in range(self.num_envs) for v in (float(self.offset + i), float(self.t[i]))]

    def reset(self, seed):
        self.t = [0] * self.num_envs
        return self.obs()

    def step(self, actions):
        self.steps += 1
        mode, hit = self.mode, self.steps == args.at
        if hit and mode != "ok" and args.once_file is not None:
            try:
                os.close(os.open(args.once_file, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                hit = False
        if mode == "noisy":
            print("noise from print() at step %d" % self.steps)
            sys.stdout.flush()
            os.write(1, b"noise written to fd 1\n")
        if hit and mode == "crash":
            sys.stderr.write("simulated crash: the physics blew up at step %d\n" % self.steps)
            sys.stderr.flush()
            os._exit(3)
        if hit and mode == "hang":
            time.sleep(3600)
        if hit and mode == "garbage":
            state["garbage"] = True
        if hit and mode == "twice":
            state["twice"] = True
        if hit and mode == "exit-idle":
            state["exit"] = True
        if hit and mode == "error":
            raise ValueError("the pole fell off the cart")
        n = self.num_envs
        final, term = {}, [False] * n
        for i in range(n):
            self.t[i] += 1
            if self.t[i] == 5:
                term[i] = True
                final[i] = [float(self.offset + i), 5.0]
                self.t[i] = 0
        obs = self.obs()
        if hit and mode == "nan":
            obs[1] = float("nan")
        return protocol.StepResult(obs, [1.0] * n, term, [False] * n, final)

    def close(self):
        pass


protocol.serve_main(Counter, args, name="misbehaving_server")
