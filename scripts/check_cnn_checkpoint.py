#!/usr/bin/env python3
"""Loads a cnn agent's checkpoint into the equivalent PyTorch model.

The model is the one documented on agents.CNN (agents/cnn.go), built from
the checkpoint's own config (agent.conv, agent.hidden, agent.activation) and
the observation shape given on the command line. load_state_dict(strict=True)
must accept the checkpoint's weights as they are (PyTorch layouts: Conv2d
out×in×kh×kw, Linear out×in, Flatten of NCHW maps). With --expect FILE (JSON
{"obs": [[...]], "logits": [[...]], "values": [...]}, channel-last
observations as the env gives them) the model's outputs are compared with
the Go agent's.

    python3 scripts/check_cnn_checkpoint.py runs/<run>/checkpoints/step-N.safetensors 10 10 4

Needs only torch (the safetensors file is read by hand).
"""
import json
import struct
import sys
import tomllib

import torch
from torch import nn


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    meta = header.pop("__metadata__", {})
    tensors = {}
    for name, info in header.items():
        assert info["dtype"] == "F32", (name, info["dtype"])
        lo, hi = info["data_offsets"]
        t = torch.frombuffer(bytearray(data[lo:hi]), dtype=torch.float32)
        tensors[name] = t.reshape(info["shape"]).clone()
    return tensors, meta


class CNN(nn.Module):
    def __init__(self, H, W, C, conv, hidden, activation, n_out, critic):
        super().__init__()
        self.shape = (H, W, C)
        layers, c, h, w = [], C, H, W
        for layer in conv:
            out, k, s = layer[:3]
            p = layer[3] if len(layer) > 3 else 0
            layers += [nn.Conv2d(c, out, kernel_size=k, stride=s, padding=p), nn.ReLU()]
            c, h, w = out, (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
        layers.append(nn.Flatten())
        width = c * h * w
        for n in hidden:
            layers += [nn.Linear(width, n), nn.ReLU() if activation == "relu" else nn.Tanh()]
            width = n
        self.torso = nn.Sequential(*layers)
        self.actor = nn.Linear(width, n_out)
        self.critic = nn.Linear(width, 1) if critic else None

    def forward(self, obs):
        x = obs.view(-1, *self.shape).permute(0, 3, 1, 2)  # channel-last to NCHW
        h = self.torso(x)
        return self.actor(h), (self.critic(h).squeeze(-1) if self.critic is not None else None)


def main():
    args = sys.argv[1:]
    expect = None
    if "--expect" in args:
        i = args.index("--expect")
        expect = json.load(open(args[i + 1]))
        del args[i:i + 2]
    path, H, W, C = args[0], int(args[1]), int(args[2]), int(args[3])
    tensors, meta = read_safetensors(path)
    cfg = tomllib.loads(meta["config"])["agent"]
    assert cfg["name"] == "cnn", cfg["name"]
    weights = {k: v for k, v in tensors.items()
               if not k.startswith(("optimizer.", "obs_norm", "reward_norm")) and k != "actor_logstd"}
    n_out = weights["actor.weight"].shape[0]
    model = CNN(H, W, C, cfg["conv"], cfg["hidden"], cfg["activation"], n_out, "critic.weight" in weights)
    model.load_state_dict(weights, strict=True)
    print(f"{path}: load_state_dict(strict=True) took {len(weights)} tensors:",
          ", ".join(f"{k} {list(v.shape)}" for k, v in weights.items()))
    obs = torch.tensor(expect["obs"], dtype=torch.float32) if expect else (torch.rand(4, H * W * C) < 0.1).float()
    with torch.no_grad():
        logits, values = model(obs)
    print("logits", logits.tolist())
    print("values", values.tolist() if values is not None else None)
    if expect:
        dl = (logits - torch.tensor(expect["logits"], dtype=torch.float32)).abs().max().item()
        dv = (values - torch.tensor(expect["values"], dtype=torch.float32)).abs().max().item()
        print(f"max |torch - go|: logits {dl:.3g}, values {dv:.3g}")
        if dl > 1e-4 or dv > 1e-4:
            sys.exit("the PyTorch model does not reproduce the Go agent's outputs")
        print("OK: the PyTorch model reproduces the Go agent's outputs")


if __name__ == "__main__":
    main()
