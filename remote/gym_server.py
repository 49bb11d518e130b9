#!/usr/bin/env python3
"""Serve any Gymnasium environment over the agenttrainer remote protocol.

Needs only the standard library and gymnasium itself (with the NumPy it
brings):

    python3 remote/gym_server.py --env CartPole-v1                 # stdin/stdout
    python3 remote/gym_server.py --env Pendulum-v1 --listen 127.0.0.1:5555
    python3 remote/gym_server.py --env FrozenLake-v1 --kwargs '{"is_slippery": false}'

and in the trainer's config:

    [env]
    id = "remote"
    num_envs = 16
    args = { command = ["python3", "remote/gym_server.py", "--env", "CartPole-v1"] }

The client's hello may carry options (env.args.options): "env" names the
environment instead of --env, "kwargs" adds keyword arguments for
gymnasium.make over --kwargs.

The server holds N single environments and auto-resets them itself, the way
Gymnasium's vector environments do in same-step mode; this behaves the same
on every Gymnasium version (their vector envs changed auto-reset semantics
in 1.0). Observations are flattened with gymnasium.spaces.flatten (a
Discrete observation becomes one-hot); actions may be Discrete or Box. With
--success-key KEY, info[KEY] on an episode's last step is reported as its
success (e.g. --success-key is_success).
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import protocol  # noqa: E402


class GymBatch(object):
    """N Gymnasium environments with manual auto-reset."""

    def __init__(self, num_envs, env_id, kwargs, success_key=None):
        try:
            import gymnasium
            from gymnasium import spaces
        except ImportError as e:
            raise RuntimeError("gymnasium is not installed for %s (%s): pip install gymnasium" % (sys.executable, e))
        self._spaces = spaces
        self.num_envs = num_envs
        self.success_key = success_key
        self.reports_success = success_key is not None
        self.envs = []
        try:
            for _ in range(num_envs):
                self.envs.append(gymnasium.make(env_id, **kwargs))
        except Exception:
            self.close()
            raise
        env = self.envs[0]
        spec = getattr(env, "spec", None)
        self.env_name = env_id
        self.max_episode_steps = int(getattr(spec, "max_episode_steps", 0) or 0)

        self.obs_space = env.observation_space
        flat = spaces.flatten_space(self.obs_space)
        dim = 1
        for s in flat.shape:
            dim *= int(s)
        self.obs_dim = dim
        self.observation_space = protocol.box_space(dim, _flat(flat.low), _flat(flat.high))

        self.act_space = env.action_space
        if isinstance(self.act_space, spaces.Discrete):
            self.action_space = protocol.discrete_space(int(self.act_space.n))
            self.act_start = int(getattr(self.act_space, "start", 0))
        elif isinstance(self.act_space, spaces.Box):
            adim = 1
            for s in self.act_space.shape:
                adim *= int(s)
            self.action_space = protocol.box_space(adim, _flat(self.act_space.low), _flat(self.act_space.high))
        else:
            raise RuntimeError("%s has action space %s; this adapter serves Discrete and Box actions "
                               "(wrap the environment to flatten its actions)" % (env_id, self.act_space))

    def _flat(self, obs):
        return self._spaces.flatten(self.obs_space, obs)

    def _action(self, a):
        if "n" in self.action_space:
            return self.act_start + a
        import numpy as np  # present wherever gymnasium is
        return np.asarray(a, dtype=self.act_space.dtype).reshape(self.act_space.shape)

    def reset(self, seed):
        out = []
        for i, env in enumerate(self.envs):
            obs, _ = env.reset(seed=None if seed is None else seed + i)
            out.append(protocol.f32_bytes(self._flat(obs)))
        return b"".join(out)

    def step(self, actions):
        n = self.num_envs
        obs_parts = []
        rewards = [0.0] * n
        terminated = [False] * n
        truncated = [False] * n
        final_obs = {}
        success = {}
        for i, env in enumerate(self.envs):
            obs, reward, term, trunc, info = env.step(self._action(actions[i]))
            rewards[i] = float(reward)
            if term or trunc:
                terminated[i], truncated[i] = bool(term), bool(trunc)
                final_obs[i] = protocol.f32_bytes(self._flat(obs))
                if self.success_key is not None:
                    success[i] = bool(info.get(self.success_key, False))
                obs, _ = env.reset()
            obs_parts.append(protocol.f32_bytes(self._flat(obs)))
        return protocol.StepResult(b"".join(obs_parts), rewards, terminated, truncated, final_obs, success)

    def close(self):
        for env in self.envs:
            try:
                env.close()
            except Exception:
                pass


def _flat(x):
    if hasattr(x, "ravel"):
        return x.ravel().tolist()
    return list(x)


def main():
    parser = argparse.ArgumentParser(description="Serve a Gymnasium environment over the agenttrainer remote protocol.")
    parser.add_argument("--env", help="Gymnasium environment id, e.g. CartPole-v1 (or options.env in the client's hello)")
    parser.add_argument("--kwargs", default="{}", help="JSON object of keyword arguments for gymnasium.make")
    parser.add_argument("--success-key", default=None, help="info key whose value on an episode's last step is its success")
    protocol.add_server_args(parser)
    args = parser.parse_args()
    try:
        base_kwargs = json.loads(args.kwargs)
    except ValueError as e:
        parser.error("--kwargs is not JSON: %s" % e)
    if not isinstance(base_kwargs, dict):
        parser.error("--kwargs must be a JSON object")

    def factory(num_envs, options):
        env_id = options.get("env") or args.env
        if not env_id:
            raise RuntimeError("no environment to serve: start gym_server.py with --env ID or set env.args.options.env")
        kwargs = dict(base_kwargs)
        kwargs.update(options.get("kwargs") or {})
        return GymBatch(num_envs, env_id, kwargs, args.success_key)

    protocol.serve_main(factory, args, name="gym_server")


if __name__ == "__main__":
    main()
