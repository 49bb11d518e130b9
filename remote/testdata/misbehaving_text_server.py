#!/usr/bin/env python3
"""A text environment server that misbehaves when asked to, for the tests of
envs/remote (text.go) and internal/hostile's remote-text group.

Each episode echoes: reset answers "ready: <task as JSON>", a step answers
"you said: <action>" with reward 0, and the action "stop" ends the episode
with reward 1 (success) and an empty observation. The first word of an action picks a misbehaviour:

    crash           writes a line to stderr and exits with status 3
    hang            stops answering (sleeps for an hour)
    raise           the environment raises ValueError (ends that episode)
    huge N          an observation of N bytes (the server refuses one over
                    the client's max_observation_bytes: a session error)
    info-odd        info holding a set, NaN, a NumPy-like value and a tuple
                    (converted to JSON by protocol.py)
    info-not-dict   info that is a list (protocol.py refuses it)
    raw-huge N      an observation of N bytes, past the server's own check
    raw-latin1      an observation that is not UTF-8
    raw-info-list   "info": [1, 2]
    raw-info-deep   an info object nested 20,000 levels deep
    raw-reward-str  "reward": "1"
    raw-no-done     a step reply without "done"
    raw-header      a header that is not JSON (the stream is lost)
    raw-error       an error reply that names no session (the stream ends)
    raw-wrong-id    a reply with the id of the request before
    raw-garbage     text instead of a frame
    raw-stdout      prints to sys.stdout and fd 1 (must be harmless)

A task with "fail": "reset" makes reset raise; "fail": "from_dict" makes
from_dict raise. --once-file PATH makes crash and hang happen only in the
first process that gets there (it creates PATH): a restarted server
behaves. The same holds for the raw- modes that break the stream.
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import protocol  # noqa: E402
import textenv  # noqa: E402

raw = {}  # the misbehaviour of the next reply, set by step
# What leaves the connection unusable: --once-file limits these to one
# process.
FATAL = ("crash", "hang", "raw-huge", "raw-info-deep", "raw-header", "raw-error", "raw-wrong-id", "raw-garbage")
_write = protocol.Channel.write


def write(self, header, payload=b""):
    mode = raw.pop("mode", None)
    if mode is None or header.get("type") != "text_step":
        return _write(self, header, payload)
    if mode == "raw-huge":
        payload = b"x" * raw.pop("n")
    elif mode == "raw-latin1":
        payload = "café crème".encode("latin-1")
    elif mode == "raw-info-list":
        header["info"] = [1, 2]
    elif mode == "raw-info-deep":
        hb = json.dumps(header, separators=(",", ":"))[:-1] + ',"info":{"a":' + "[" * 20000 + "]" * 20000 + "}}"
        return _raw_frame(self, hb.encode(), payload)
    elif mode == "raw-reward-str":
        header["reward"] = "1"
    elif mode == "raw-no-done":
        del header["done"]
    elif mode == "raw-header":
        return _raw_frame(self, b'{"type": text_step, "id": ' + str(header["id"]).encode() + b"}", payload)
    elif mode == "raw-error":
        return _write(self, {"type": "error", "message": "RuntimeError: the server's own state is corrupt"})
    elif mode == "raw-wrong-id":
        header["id"] -= 1
    elif mode == "raw-garbage":
        self.wfile.write(b"Traceback (most recent call last): something printed this\n")
        self.wfile.flush()
        return None
    return _write(self, header, payload)


def _raw_frame(channel, hb, payload):
    channel.wfile.write(protocol.PREFIX.pack(protocol.MAGIC, len(hb), len(payload)) + hb + payload)
    channel.wfile.flush()


protocol.Channel.write = write


class Odd(object):
    """A value with tolist(), as NumPy's have."""

    def tolist(self):
        return [1.5, 2.5]


class Misbehaving(textenv.TextEnv):
    env_name = "Misbehaving"
    max_turns = 50
    once_file = None

    @classmethod
    def from_dict(cls, task):
        if task.get("fail") == "from_dict":
            raise KeyError("the task has no question")
        env = cls()
        env.task = task
        return env

    def reset(self, task):
        self.won = False
        if task.get("fail") == "reset":
            raise ValueError("reset cannot start this task")
        return "ready: " + json.dumps(task, sort_keys=True), {"turn": 0}

    def step(self, action):
        words = action.split()
        word = words[0] if words else ""
        if word in FATAL and not self._once():
            word = "behave"
        if word in ("crash", "hang"):
            if word == "crash":
                sys.stderr.write("misbehaving_text_server: simulated crash\n")
                sys.stderr.flush()
                os._exit(3)
            time.sleep(3600)
        if word == "raise":
            raise ValueError("the verifier broke")
        if word == "huge":
            return "x" * int(words[1]), 0.0, False, {}
        if word == "info-odd":
            return "odd info", 0.0, False, {"set": {3}, "nan": float("nan"), "array": Odd(), "pair": (1, "b"), 7: "seven"}
        if word == "info-not-dict":
            return "bad info", 0.0, False, ["not", "a", "dict"]
        if word.startswith("raw-"):
            raw["mode"] = word
            if word == "raw-huge":
                raw["n"] = int(words[1])
        if word == "raw-stdout":
            print("stray output on sys.stdout")
            os.write(1, b"stray output on fd 1\n")
        if word == "stop":
            self.won = True
            return "", 1.0, True, {"turns": "all"}
        return "you said: " + action, 0.0, False, {"length": len(action)}

    def succeeded(self):
        return self.won

    def _once(self):
        if self.once_file is None:
            return True
        try:
            fd = os.open(self.once_file, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return False
        os.close(fd)
        return True


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--once-file", default=None)
    textenv.add_text_server_args(parser)
    args = parser.parse_args()
    Misbehaving.once_file = args.once_file
    textenv.serve_args(Misbehaving, args)


if __name__ == "__main__":
    main()
