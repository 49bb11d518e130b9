"""Text environments for agenttrainer's language-model agents, written in
Python and served over the remote protocol (version 4; PROTOCOL.md).

Standard library only, Python 3.9+. Subclass TextEnv the way rLLM's BaseEnv
is subclassed, and serve it from a __main__ block:

    import textenv

    class Echo(textenv.TextEnv):
        @classmethod
        def from_dict(cls, task):          # a dataset row, env.args under it
            return cls(task["question"], task["answer"])

        def __init__(self, question, answer):
            self.question, self.answer = question, answer

        def reset(self, task):             # -> observation, info
            return self.question, {}

        def step(self, action):            # -> observation, reward, done, info
            right = action.strip() == str(self.answer)
            return "", 1.0 if right else 0.0, True, {"right": right}

    if __name__ == "__main__":
        textenv.serve(Echo)

and in the trainer's config:

    [env]
    id = "remote-text"
    args = { command = ["python3", "echo_env.py"] }   # or address = "127.0.0.1:5555"

Every episode is a session: the trainer sends the task (a dataset row with
env.args under it, less the connection's own keys), the server builds an
environment with from_dict(task) and calls reset(task); each step sends the
model's action and returns the observation, reward, done and info. The
session ends when step says done (or raises), and the server calls close().
An exception ends that episode only: the trainer masks it and goes on.

Observations and actions are text (UTF-8). None is sent as an empty
observation and one that is not a str as its JSON (rLLM's dict
observations); info is a dict of JSON values (NumPy numbers and arrays are
converted, NaN and infinities become null). An environment whose class
defines succeeded() reports each episode's success to the trainer;
max_turns, when set, bounds the turns of an episode.

End an episode with an empty observation ("" or None) when the single_turn
agent plays it: like rLLM's MathAgent, it scores its last answer only then
(any other final observation starts a turn of its own).

rLLM environments are served as they are, TextEnv or not: a reset() that
takes no task is called without one, and from_dict(info) is rLLM's own
constructor (remote/testdata/rllm_style_server.py).
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import protocol  # noqa: E402


class TextEnv(object):
    """rLLM's BaseEnv for agenttrainer: one instance per episode.

    Override from_dict (or __init__ and let from_dict call it without
    arguments), reset and step; close and succeeded are optional.
    """

    # The most turns an episode may take (0: the trainer's limit alone).
    max_turns = 0

    @classmethod
    def from_dict(cls, task):
        """Build the environment for task, a dict (a dataset row with
        env.args under it). The default calls cls() and keeps the task in
        self.task."""
        env = cls()
        env.task = task
        return env

    def reset(self, task):
        """Start the episode of task; return (observation, info)."""
        raise NotImplementedError("%s must define reset(task) -> (observation, info)" % type(self).__name__)

    def step(self, action):
        """Apply the agent's action (text); return (observation, reward,
        done, info)."""
        raise NotImplementedError("%s must define step(action) -> (observation, reward, done, info)" % type(self).__name__)

    def close(self):
        """Release what the environment holds; called when its session ends."""

    # def succeeded(self) -> bool: define it to report each episode's success.


def add_text_server_args(parser):
    """The command-line options of a text server (protocol.add_server_args
    and --max-sessions)."""
    protocol.add_server_args(parser)
    parser.add_argument("--max-sessions", type=int, default=protocol.DEFAULT_MAX_SESSIONS,
                        help="episodes one connection may hold at once (default %d)" % protocol.DEFAULT_MAX_SESSIONS)


def serve(env_class, argv=None, name=None, description=None):
    """Serve env_class as its command line says: over stdin/stdout (the
    trainer starts the server: env.args.command) or TCP with --listen
    HOST:PORT (env.args.address), --secret-file for other hosts."""
    name = name or getattr(env_class, "env_name", None) or env_class.__name__
    parser = argparse.ArgumentParser(description=description or "Serve the text environment %s to agenttrainer (env.id = \"remote-text\")." % name)
    add_text_server_args(parser)
    serve_args(env_class, parser.parse_args(argv), name)


def serve_args(env_class, args, name=None):
    """Serve env_class with args parsed by a parser given
    add_text_server_args (for a server with options of its own)."""
    name = name or getattr(env_class, "env_name", None) or env_class.__name__
    if args.max_sessions < 1:
        raise SystemExit("%s: --max-sessions must be at least 1" % name)
    if args.num_envs is not None:
        raise SystemExit("%s: --num-envs sizes numeric servers; a text server holds one session per episode "
                         "(--max-sessions bounds them)" % name)
    protocol.serve_main(protocol.TextServer(env_class, args.max_sessions, name), args, name=name)
