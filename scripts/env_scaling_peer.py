#!/usr/bin/env python3
"""The peers of agenttrainer's env workers on the same environment: env
steps/s of Gymnasium's AsyncVectorEnv and SB3's SubprocVecEnv stepping
scripts/sleepenv.py's Sleep-v0 (1 ms of sleep, or of CPU, per step) with one
environment per process, for each count of processes. scripts/env-scaling.sh
runs it beside agenttrainer's BenchmarkWorkers.

    PYTHONPATH=DIR:scripts python3 scripts/env_scaling_peer.py --kind sleep --workers 1,2,4,8,16

where DIR holds gymnasium and stable_baselines3 (their sources, e.g. git
archive of their repositories) and NumPy and cloudpickle are installed.
Only SB3's vec_env modules are loaded (no torch): its package __init__ files
are skipped, and env_util (Atari wrappers, pandas) is replaced by its
is_wrapped, which the worker loop imports.
"""

import argparse
import os
import sys
import time
import types


def sb3_subproc():
    """SubprocVecEnv without importing SB3's package (which needs torch)."""
    for spec in sys.path:
        root = os.path.join(spec or ".", "stable_baselines3")
        if os.path.isdir(root):
            break
    else:
        raise SystemExit("stable_baselines3 is not on PYTHONPATH")
    for name in ["stable_baselines3", "stable_baselines3.common", "stable_baselines3.common.vec_env"]:
        m = types.ModuleType(name)
        m.__path__ = [os.path.join(os.path.dirname(root), *name.split("."))]
        sys.modules[name] = m
    # The worker loop imports env_util for its is_wrapped command alone;
    # env_util pulls in the Atari wrappers and Monitor (pandas). A stand-in
    # with SB3's is_wrapped semantics keeps the worker loop SB3's own.
    eu = types.ModuleType("stable_baselines3.common.env_util")

    def is_wrapped(env, wrapper_class):
        while isinstance(env, __import__("gymnasium").Wrapper):
            if isinstance(env, wrapper_class):
                return True
            env = env.env
        return False

    eu.is_wrapped = is_wrapped
    sys.modules[eu.__name__] = eu
    from stable_baselines3.common.vec_env.subproc_vec_env import SubprocVecEnv
    return SubprocVecEnv


def make(kind):
    import gymnasium
    import sleepenv  # noqa: F401  (registers Sleep-v0)
    kw = {"sleep_ms": 1.0, "spin_ms": 0.0} if kind == "sleep" else {"sleep_ms": 0.0, "spin_ms": 1.0}
    return lambda: gymnasium.make("Sleep-v0", **kw)


def measure(vec, n, steps, sb3):
    import numpy as np
    rng = np.random.default_rng(1)
    vec.reset()
    act = lambda: rng.integers(0, 2, size=n)  # noqa: E731
    vec.step(act())  # out of the timing
    t = time.perf_counter()
    for _ in range(steps):
        vec.step(act())
    return n * steps / (time.perf_counter() - t)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--kind", choices=["sleep", "spin"], default="sleep")
    p.add_argument("--workers", default="1,2,4,8,16")
    p.add_argument("--steps", type=int, default=400, help="vector steps per measurement")
    p.add_argument("--repeat", type=int, default=3, help="measurements per figure (the median is printed)")
    a = p.parse_args()
    from gymnasium.vector import AsyncVectorEnv
    SubprocVecEnv = sb3_subproc()
    import statistics
    print("%-28s %8s %12s" % ("peer", "workers", "env steps/s"))
    for w in [int(x) for x in a.workers.split(",")]:
        for name, build, sb3 in [("gymnasium AsyncVectorEnv", lambda fns: AsyncVectorEnv(fns), False),
                                 ("sb3 SubprocVecEnv", lambda fns: SubprocVecEnv(fns, start_method="fork"), True)]:
            rates = []
            for _ in range(a.repeat):
                vec = build([make(a.kind)] * w)
                try:
                    rates.append(measure(vec, w, a.steps, sb3))
                finally:
                    vec.close()
            print("%-28s %8d %12.0f   (runs: %s)" % (name + " " + a.kind, w, statistics.median(rates), ", ".join("%.0f" % r for r in rates)), flush=True)


if __name__ == "__main__":
    main()
