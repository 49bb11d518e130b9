#!/usr/bin/env python3
"""A remote environment server (stdio) that attacks its client, for the
hostile-input suite (internal/hostile). It speaks just enough of
remote/PROTOCOL.md version 2 to reach the attack: --mode picks it, --at the
step request (1-based, counting steps after the reset) where a mid-run attack
happens. Its sub-environments count steps: observation [i, t], reward 1,
episodes of 5 steps. Standard library only."""

import json
import struct
import sys
import time

mode = sys.argv[sys.argv.index("--mode") + 1] if "--mode" in sys.argv else "ok"
at = int(sys.argv[sys.argv.index("--at") + 1]) if "--at" in sys.argv else 3

rf = sys.stdin.buffer
wf = sys.stdout.buffer


def frame(header, payload=b"", magic=b"AGTP"):
    hb = json.dumps(header, separators=(",", ":")).encode()
    return struct.pack("<4sII", magic, len(hb), len(payload)) + hb + payload


def send(b, drip=False):
    if drip:
        for i in range(len(b)):
            wf.write(b[i:i + 1])
            wf.flush()
            time.sleep(0.5)
        return
    wf.write(b)
    wf.flush()


def read():
    p = rf.read(12)
    if len(p) < 12:
        sys.exit(0)
    _, h, n = struct.unpack("<4sII", p)
    hdr = json.loads(rf.read(h))
    payload = rf.read(n)
    return hdr, payload


hdr, _ = read()
n = hdr.get("num_envs", 1)
rid = hdr.get("id")
obs_space = {"kind": "box", "dim": 2}
act_space = {"kind": "discrete", "n": 2}
hello = {"type": "hello", "id": rid, "protocol": 2, "num_envs": n, "env": "hostile"}

if mode == "silence-hello":
    time.sleep(3600)
if mode == "exit-at-hello":
    sys.exit(0)
if mode == "wrong-magic":
    send(frame(dict(hello, observation_space=obs_space, action_space=act_space), magic=b"HTTP"))
    time.sleep(3600)
if mode == "http":
    send(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
    time.sleep(3600)
if mode == "huge-header":
    send(struct.pack("<4sII", b"AGTP", 0xFFFFFFFF, 0))
    time.sleep(3600)
if mode == "huge-payload":
    send(struct.pack("<4sII", b"AGTP", 20, 0xFFFFFFF0) + b'{"type":"hello","id":1}'[:20])
    time.sleep(3600)
if mode == "header-not-json":
    send(struct.pack("<4sII", b"AGTP", 5, 0) + b"{{{{{")
    time.sleep(3600)
if mode == "header-array":
    send(struct.pack("<4sII", b"AGTP", 2, 0) + b"[]")
    time.sleep(3600)
if mode == "stderr-flood":
    chunk = b"x" * 65536 + b"\n"
    for _ in range(1600):  # 100 MiB
        sys.stderr.buffer.write(chunk)
    sys.stderr.flush()
    sys.exit(4)
if mode == "stdout-flood":
    for _ in range(1600):
        wf.write(b"x" * 65536)
    wf.flush()
    sys.exit(4)
spaces = {
    "discrete-16777216": (obs_space, {"kind": "discrete", "n": 16777216}),
    "discrete-1000000": (obs_space, {"kind": "discrete", "n": 1000000}),
    "discrete-0": (obs_space, {"kind": "discrete", "n": 0}),
    "discrete-negative": (obs_space, {"kind": "discrete", "n": -2}),
    "discrete-float": (obs_space, {"kind": "discrete", "n": 2.5}),
    "discrete-1e300": (obs_space, {"kind": "discrete", "n": 1e300}),
    "dim-1000000": ({"kind": "box", "dim": 1000000}, act_space),
    "dim-1048577": ({"kind": "box", "dim": 1048577}, act_space),
    "dim-0": ({"kind": "box", "dim": 0}, act_space),
    "dim-string": ({"kind": "box", "dim": "4"}, act_space),
    "obs-discrete": ({"kind": "discrete", "n": 4}, act_space),
    "kind-unknown": ({"kind": "tuple"}, act_space),
    "low-wrong-length": ({"kind": "box", "dim": 2, "low": [0, 0, 0]}, act_space),
    "action-box-huge": (obs_space, {"kind": "box", "dim": 1048576}),
}
if mode in spaces:
    o, a = spaces[mode]
    send(frame(dict(hello, observation_space=o, action_space=a)))
    while True:
        hdr, _ = read()
        if hdr.get("type") == "reset":
            dim = o.get("dim", 2) if isinstance(o.get("dim"), int) else 2
            send(frame({"type": "reset", "id": hdr.get("id")}, b"\0" * (4 * n * max(dim, 0))))
        elif hdr.get("type") == "close":
            send(frame({"type": "bye", "id": hdr.get("id")}))
            sys.exit(0)
        else:
            send(frame({"type": "error", "id": hdr.get("id"), "message": "no"}))
if mode == "hello-no-id":
    h = dict(hello, observation_space=obs_space, action_space=act_space)
    del h["id"]
    send(frame(h))
    time.sleep(3600)
if mode == "hello-wrong-id":
    send(frame(dict(hello, id=99, observation_space=obs_space, action_space=act_space)))
    time.sleep(3600)
if mode == "hello-protocol-1":
    send(frame(dict(hello, protocol=1, observation_space=obs_space, action_space=act_space)))
    time.sleep(3600)
if mode == "hello-num-envs":
    send(frame(dict(hello, num_envs=n + 7, observation_space=obs_space, action_space=act_space)))
    time.sleep(3600)
send(frame(dict(hello, observation_space=obs_space, action_space=act_space)), drip=(mode == "drip-hello"))

t = [0] * n
steps = 0


def obs_bytes():
    return struct.pack("<%df" % (2 * n), *[v for i in range(n) for v in (float(i), float(t[i]))])


while True:
    hdr, payload = read()
    typ, rid = hdr.get("type"), hdr.get("id")
    if typ == "close":
        send(frame({"type": "bye", "id": rid}))
        sys.exit(0)
    if typ == "reset":
        t = [0] * n
        send(frame({"type": "reset", "id": rid}, obs_bytes()))
        continue
    steps += 1
    hit = steps == at
    ended = []
    for i in range(n):
        t[i] += 1
        if t[i] == 5:
            ended.append(i)
            t[i] = 0
    rewards = [1.0] * n
    flags = [1 if i in ended else 0 for i in range(n)]
    final = b"".join(struct.pack("<2f", float(i), 5.0) for i in ended)
    ob = obs_bytes()
    if hit and mode == "inf-reward":
        rewards[0] = float("inf")
    if hit and mode == "flag-bits":
        flags[0] |= 0x80
    body = ob + struct.pack("<%dd" % n, *rewards) + bytes(flags) + final
    if hit and mode == "short-payload":
        body = body[:-3]
    if hit and mode == "long-payload":
        body = body + b"\0" * 16
    if hit and mode == "wrong-id":
        rid = rid + 5
    if hit and mode == "no-id":
        send(frame({"type": "step"}, body))
        continue
    if hit and mode == "error-no-message":
        send(frame({"type": "error", "id": rid}))
        continue
    if hit and mode == "unknown-type":
        send(frame({"type": "surprise", "id": rid}))
        continue
    if hit and mode == "exit":
        sys.exit(0)
    if hit and mode == "silence":
        time.sleep(3600)
    send(frame({"type": "step", "id": rid}, body), drip=(hit and mode == "drip"))
