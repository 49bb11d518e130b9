#!/usr/bin/env python3
"""Record NumPy random streams for internal/nprand's tests.

Writes internal/nprand/testdata/numpy.json and testdata/draws/generator.json. Run with NumPy 1.24 (Debian's
python3-numpy): /usr/bin/python3 scripts/record-nprand.py
Every value is written as a decimal integer or as a float's exact bits
(float.hex) so that the Go test can compare bit for bit.
"""
import json
import sys

import numpy as np

out = {"numpy_version": np.__version__, "random_state": [], "random_state_array": [],
       "seed_sequence": [], "generator": []}

for seed in [0, 1, 42, 12345, 2**31 - 1, 2**32 - 1]:
    rs = np.random.RandomState(seed)
    rec = {"seed": seed}
    rec["uint32"] = [int(v) for v in rs._bit_generator.random_raw(8)]
    rs = np.random.RandomState(seed)
    rec["rand"] = [float(rs.rand()).hex() for _ in range(5)]
    rec["rand8"] = [float(v).hex() for v in rs.rand(8)]
    rec["randint"] = []
    for low, high in [(0, 2), (0, 3), (1, 9), (0, 1), (0, 7), (-5, 5), (0, 100), (0, 2**31), (0, 2**33 + 5)]:
        rec["randint"].append({"low": low, "high": high, "values": [int(rs.randint(low, high)) for _ in range(4)]})
    rec["randint_size"] = {"low": 1, "high": 6, "values": [int(v) for v in rs.randint(1, 6, 8)]}
    rec["choice"] = [{"n": n, "value": int(rs.choice(n))} for n in [1, 2, 5, 8, 3]]
    rec["choice_list"] = {"items": [4, 7, 9], "value": int(rs.choice([4, 7, 9]))}
    # after crossing the 624-word boundary
    for _ in range(700):
        rs.rand()
    rec["rand_after_1400_words"] = [float(rs.rand()).hex() for _ in range(3)]
    out["random_state"].append(rec)

for words in [[0], [1, 2, 3], [0xdeadbeef, 0x12345678, 7, 8, 9]]:
    rs = np.random.RandomState(words)
    out["random_state_array"].append({"words": words, "rand": [float(rs.rand()).hex() for _ in range(5)]})

for entropy in [0, 1, 42, 2**32 - 1, 2**32, 2**63 + 12345, 2**64 - 1]:
    ss = np.random.SeedSequence(entropy)
    out["seed_sequence"].append({"entropy": str(entropy),
                                 "state32": [int(v) for v in ss.generate_state(8, np.uint32)],
                                 "state64": [str(int(v)) for v in ss.generate_state(4, np.uint64)]})

for seed in [0, 1, 7, 123456789, 2**40 + 3]:
    g = np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed)))
    rec = {"seed": seed, "uint64": [str(int(v)) for v in g.bit_generator.random_raw(5)]}
    g = np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed)))
    rec["random"] = [float(v).hex() for v in g.random(3)]
    rec["uniform"] = [float(v).hex() for v in g.uniform(low=-0.05, high=0.05, size=(4,))]
    rec["uniform_scalar"] = float(g.uniform(low=-0.6, high=-0.4)).hex()
    high = np.array([np.pi, 1.0])
    rec["uniform_array_bounds"] = [float(v).hex() for v in g.uniform(low=-high, high=high)]
    out["generator"].append(rec)

json.dump(out, open(sys.argv[1] if len(sys.argv) > 1 else "internal/nprand/testdata/numpy.json", "w"), indent=1)

# Generator.integers (Lemire, with PCG64's kept half word) and choice with p,
# interleaved with random() as rLLM's FrozenLake map generation draws them.
draws = []
for seed in [0, 3, 42, 577090037, 2**33 + 1]:
    g = np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed)))
    ops = []
    for high in [2, 3, 5, 9, 16, 100, 7, 2**31, 2**32, 2**32 + 1, 2**40 + 7, 2**63 - 1, 1, 4]:
        ops.append({"op": "integers", "low": 0, "high": str(high), "value": str(int(g.integers(0, high)))})
    ops.append({"op": "integers", "low": -5, "high": "5", "value": str(int(g.integers(-5, 5)))})
    ops.append({"op": "random", "value": float(g.random()).hex()})
    ops.append({"op": "integers", "low": 0, "high": "6", "value": str(int(g.integers(0, 6)))})
    for p in [0.8, 0.663767, 0.1, 1.0, 0.0, 0.6000000000000001]:
        idx = g.choice(["F", "H"], (3, 3), p=[p, 1 - p])
        ops.append({"op": "choice2", "p": float(p).hex(), "n": 9, "values": [0 if v == "F" else 1 for v in idx.flatten().tolist()]})
        ops.append({"op": "integers", "low": 0, "high": "4", "value": str(int(g.integers(0, 4)))})
    idx = g.choice(4, 7, p=[0.1, 0.2, 0.3, 0.4])
    ops.append({"op": "choice", "p": [float(x).hex() for x in [0.1, 0.2, 0.3, 0.4]], "n": 7, "values": [int(v) for v in idx]})
    draws.append({"seed": str(seed), "ops": ops})
json.dump({"numpy_version": np.__version__, "generator": draws}, open(sys.argv[2] if len(sys.argv) > 2 else "internal/nprand/testdata/draws/generator.json", "w"), indent=0)
