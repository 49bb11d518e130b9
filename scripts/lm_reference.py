#!/usr/bin/python3
"""A PyTorch reference of the decoder-only transformers agents/lm runs.

Written from the architectures' definitions (transformers' Qwen2, Qwen3 and
Llama modelling code as documented; transformers itself is not installable
here): plain torch modules that load a Hugging Face model directory by
tensor name, so that a model the project writes is checked the way PyTorch
code would load it. Runs on Debian's python3-torch 1.13 (use /usr/bin/python3).

Commands:
  make      a random model in the Hugging Face layout (config.json and
            model.safetensors, or shards with model.safetensors.index.json;
            F32, BF16 or F16), for tests.
  golden    per-token log-probabilities, entropies and parameter gradients of
            a padded batch: the golden file agents/lm's parity test replays.
  logprobs  the log-probabilities of a batch file under a model directory, and
            with --against, the largest difference from another directory's
            (the check that the project's saved model loads by name with
            identical outputs).
  bench     training, batched-generation and batch-1 decode speed of a random
            model of a given shape, for the side-by-side speed table.
"""
import argparse
import json
import math
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

# --- safetensors, read and written with numpy (the package is not here) ---

DTYPES = {"F32": (np.float32, 4), "BF16": (np.uint16, 2), "F16": (np.float16, 2)}


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    body = memoryview(data)[8 + n:]
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        dt, size = DTYPES[e["dtype"]]
        b, end = e["data_offsets"]
        raw = np.frombuffer(body[b:end], dtype=dt)
        if e["dtype"] == "BF16":
            vals = (raw.astype(np.uint32) << 16).view(np.float32)
        else:
            vals = raw.astype(np.float32)
        out[name] = torch.from_numpy(vals.copy()).reshape(e["shape"])
    return out


def write_safetensors(path, tensors, dtype="F32"):
    header, chunks, off = {}, [], 0
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous()
        if dtype == "BF16":
            raw = t.to(torch.bfloat16).view(torch.int16).numpy().tobytes()
        elif dtype == "F16":
            raw = t.to(torch.float16).numpy().tobytes()
        else:
            raw = t.to(torch.float32).numpy().tobytes()
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [off, off + len(raw)]}
        chunks.append(raw)
        off += len(raw)
    header["__metadata__"] = {"format": "pt"}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for c in chunks:
            f.write(c)


def read_model_dir(d):
    index = os.path.join(d, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            wm = json.load(f)["weight_map"]
        out = {}
        for shard in sorted(set(wm.values())):
            out.update(read_safetensors(os.path.join(d, shard)))
        return out
    return read_safetensors(os.path.join(d, "model.safetensors"))


def write_model_dir(d, tensors, order, dtype, shard_bytes):
    size = {"F32": 4, "BF16": 2, "F16": 2}[dtype]
    shards, cur = [[]], 0
    for name in order:
        n = tensors[name].numel() * size
        if shard_bytes and cur + n > shard_bytes and cur > 0:
            shards.append([])
            cur = 0
        shards[-1].append(name)
        cur += n
    if len(shards) == 1:
        write_safetensors(os.path.join(d, "model.safetensors"), tensors, dtype)
        return
    weight_map, total = {}, 0
    for i, names in enumerate(shards):
        fname = "model-%05d-of-%05d.safetensors" % (i + 1, len(shards))
        write_safetensors(os.path.join(d, fname), {n: tensors[n] for n in names}, dtype)
        for n in names:
            weight_map[n] = fname
            total += tensors[n].numel() * size
    with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2, sort_keys=True)


# --- the architectures ---

class Config:
    def __init__(self, raw):
        arch = raw["architectures"][0]
        self.arch = {"Qwen2ForCausalLM": "qwen2", "Qwen3ForCausalLM": "qwen3", "LlamaForCausalLM": "llama"}[arch]
        self.vocab = raw["vocab_size"]
        self.hidden = raw["hidden_size"]
        self.inter = raw["intermediate_size"]
        self.layers = raw["num_hidden_layers"]
        self.heads = raw["num_attention_heads"]
        self.kv_heads = raw.get("num_key_value_heads", self.heads)
        self.head_dim = raw.get("head_dim") or self.hidden // self.heads
        self.eps = raw.get("rms_norm_eps", 1e-6)
        self.tied = raw.get("tie_word_embeddings", False)
        rope = raw.get("rope_parameters") or raw.get("rope_scaling") or {}
        self.theta = rope.get("rope_theta", raw.get("rope_theta", 10000.0))
        self.rope = rope if rope.get("rope_type", rope.get("type")) == "llama3" else None
        attn_bias = raw.get("attention_bias", False)
        self.qkv_bias = self.arch == "qwen2" or attn_bias
        self.o_bias = self.arch != "qwen2" and attn_bias
        self.mlp_bias = self.arch == "llama" and raw.get("mlp_bias", False)
        self.qk_norm = self.arch == "qwen3"


def inv_freq(c):
    # transformers' default rope init, in float32, then its llama3 rescaling.
    inv = 1.0 / (c.theta ** (torch.arange(0, c.head_dim, 2, dtype=torch.int64).float() / c.head_dim))
    if c.rope is None:
        return inv
    factor, low, high = c.rope["factor"], c.rope["low_freq_factor"], c.rope["high_freq_factor"]
    old = c.rope["original_max_position_embeddings"]
    low_wave, high_wave = old / low, old / high
    wave = 2 * math.pi / inv
    scaled = torch.where(wave > low_wave, inv / factor, inv)
    smooth = (old / wave - low) / (high - low)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = ~(wave < high_wave) * ~(wave > low_wave)
    return torch.where(medium, smoothed, scaled)


def rms_norm(x, w, eps):
    x32 = x.float()
    var = x32.pow(2).mean(-1, keepdim=True)
    return w * (x32 * torch.rsqrt(var + eps)).to(x.dtype)


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class Model(torch.nn.Module):
    """The model as one module whose parameters are named exactly as
    transformers names them (dots replaced for nn.ParameterDict)."""

    def __init__(self, c):
        super().__init__()
        self.c = c
        self.p = torch.nn.ParameterDict()

    def names(self):
        c = self.c
        q, kv, h = c.heads * c.head_dim, c.kv_heads * c.head_dim, c.hidden
        out = [("model.embed_tokens.weight", (c.vocab, h))]
        for l in range(c.layers):
            p = "model.layers.%d." % l
            out.append((p + "input_layernorm.weight", (h,)))
            for n, o in (("q", q), ("k", kv), ("v", kv)):
                out.append((p + "self_attn.%s_proj.weight" % n, (o, h)))
                if c.qkv_bias:
                    out.append((p + "self_attn.%s_proj.bias" % n, (o,)))
            out.append((p + "self_attn.o_proj.weight", (h, q)))
            if c.o_bias:
                out.append((p + "self_attn.o_proj.bias", (h,)))
            if c.qk_norm:
                out.append((p + "self_attn.q_norm.weight", (c.head_dim,)))
                out.append((p + "self_attn.k_norm.weight", (c.head_dim,)))
            out.append((p + "post_attention_layernorm.weight", (h,)))
            for n, o, i in (("gate", c.inter, h), ("up", c.inter, h), ("down", h, c.inter)):
                out.append((p + "mlp.%s_proj.weight" % n, (o, i)))
                if c.mlp_bias:
                    out.append((p + "mlp.%s_proj.bias" % n, (o,)))
        out.append(("model.norm.weight", (h,)))
        if not c.tied:
            out.append(("lm_head.weight", (c.vocab, h)))
        return out

    def load(self, tensors):
        want = dict(self.names())
        for name, shape in want.items():
            t = tensors[name]  # a missing tensor is a KeyError naming it
            assert tuple(t.shape) == shape, (name, t.shape, shape)
            self.p[name.replace(".", "/")] = torch.nn.Parameter(t.float().clone())
        extra = set(tensors) - set(want) - ({"lm_head.weight"} if self.c.tied else set())
        assert not extra, "unexpected tensors: %s" % sorted(extra)

    def w(self, name):
        return self.p[name.replace(".", "/")]

    def linear(self, x, name, bias):
        b = self.w(name + ".bias") if bias else None
        return F.linear(x, self.w(name + ".weight"), b)

    def forward(self, ids, mask, caches=None, start=0):
        """Logits for ids (B×T) with mask (B×T, 1 real, 0 padding), position
        ids cumsum(mask)−1 as verl makes them. With caches (a list of [k, v]
        per layer), the tokens continue cached sequences from position
        start (no padding), and the caches grow."""
        c = self.c
        B, T = ids.shape
        if caches is None:
            pos = torch.clamp(torch.cumsum(mask, dim=-1) - 1, min=0)
        else:
            pos = torch.arange(start, start + T).unsqueeze(0).expand(B, T)
        if not hasattr(self, "inv"):
            self.inv = inv_freq(c)
        freqs = pos[:, :, None].float() * self.inv[None, None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos()[:, None], emb.sin()[:, None]
        x = F.embedding(ids, self.w("model.embed_tokens.weight"))
        if caches is None:
            keys = mask.bool()[:, None, None, :]
            causal = torch.ones(T, T, dtype=torch.bool).tril()[None, None]
            allowed = keys & causal
        elif T > 1:
            S = start + T
            allowed = torch.ones(T, S, dtype=torch.bool).tril(diagonal=start)[None, None]
        else:
            allowed = None  # one new token sees every cached key
        scale = c.head_dim ** -0.5
        for l in range(c.layers):
            p = "model.layers.%d." % l
            hs = rms_norm(x, self.w(p + "input_layernorm.weight"), c.eps)
            q = self.linear(hs, p + "self_attn.q_proj", c.qkv_bias).view(B, T, c.heads, c.head_dim)
            k = self.linear(hs, p + "self_attn.k_proj", c.qkv_bias).view(B, T, c.kv_heads, c.head_dim)
            v = self.linear(hs, p + "self_attn.v_proj", c.qkv_bias).view(B, T, c.kv_heads, c.head_dim)
            if c.qk_norm:
                q = rms_norm(q, self.w(p + "self_attn.q_norm.weight"), c.eps)
                k = rms_norm(k, self.w(p + "self_attn.k_norm.weight"), c.eps)
            q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            if caches is not None:
                if len(caches) <= l:
                    caches.append([k, v])
                else:
                    caches[l] = [torch.cat((caches[l][0], k), 2), torch.cat((caches[l][1], v), 2)]
                k, v = caches[l]
            rep = c.heads // c.kv_heads  # query head h reads key/value head h // rep
            k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
            s = torch.matmul(q, k.transpose(2, 3)) * scale
            if allowed is not None:
                s = s.masked_fill(~allowed, float("-inf"))
            pr = torch.softmax(s, dim=-1)
            pr = torch.nan_to_num(pr)  # a padding query sees no key
            a = torch.matmul(pr, v).transpose(1, 2).reshape(B, T, c.heads * c.head_dim)
            x = x + self.linear(a, p + "self_attn.o_proj", c.o_bias)
            hs = rms_norm(x, self.w(p + "post_attention_layernorm.weight"), c.eps)
            g = self.linear(hs, p + "mlp.gate_proj", c.mlp_bias)
            u = self.linear(hs, p + "mlp.up_proj", c.mlp_bias)
            x = x + self.linear(F.silu(g) * u, p + "mlp.down_proj", c.mlp_bias)
        x = rms_norm(x, self.w("model.norm.weight"), c.eps)
        head = self.w("model.embed_tokens.weight" if c.tied else "lm_head.weight")
        return F.linear(x, head)


def load(d):
    with open(os.path.join(d, "config.json")) as f:
        c = Config(json.load(f))
    m = Model(c)
    m.load(read_model_dir(d))
    return m


# --- commands ---

def cmd_make(a):
    raw = {
        "architectures": [{"qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM", "llama": "LlamaForCausalLM"}[a.arch]],
        "model_type": a.arch, "vocab_size": a.vocab, "hidden_size": a.hidden, "intermediate_size": a.intermediate,
        "num_hidden_layers": a.layers, "num_attention_heads": a.heads, "num_key_value_heads": a.kv_heads,
        "hidden_act": "silu", "rms_norm_eps": a.eps, "rope_theta": a.theta, "max_position_embeddings": 4096,
        "tie_word_embeddings": a.tied, "torch_dtype": {"F32": "float32", "BF16": "bfloat16", "F16": "float16"}[a.dtype],
        "bos_token_id": 1, "eos_token_id": 2,
    }
    if a.head_dim:
        raw["head_dim"] = a.head_dim
    if a.arch != "qwen2":
        raw["attention_bias"] = a.attention_bias
    if a.arch == "llama":
        raw["mlp_bias"] = False
    if a.llama3:
        factor, low, high, old = (float(x) for x in a.llama3.split(","))
        raw["rope_scaling"] = {"rope_type": "llama3", "factor": factor, "low_freq_factor": low,
                               "high_freq_factor": high, "original_max_position_embeddings": int(old)}
    c = Config(raw)
    m = Model(c)
    g = torch.Generator().manual_seed(a.seed)
    tensors = {}
    for name, shape in m.names():
        if name.endswith("norm.weight"):
            t = 1 + 0.3 * (torch.rand(shape, generator=g) * 2 - 1)
        elif name.endswith(".bias"):
            t = 0.2 * torch.randn(shape, generator=g)
        elif name.endswith("embed_tokens.weight"):
            t = 0.3 * torch.randn(shape, generator=g)
        else:  # a projection [out, in]: std a.gain/sqrt(in)
            t = a.gain * torch.randn(shape, generator=g) / math.sqrt(shape[1])
        tensors[name] = t
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(raw, f, indent=2, sort_keys=True)
    write_model_dir(a.out, tensors, [n for n, _ in m.names()], a.dtype, a.shard_bytes)


def read_batch(path):
    with open(path) as f:
        b = json.load(f)
    rows, seq = b["rows"], b["seq"]
    ids = torch.tensor(b["ids"], dtype=torch.int64).view(rows, seq)
    mask = torch.tensor(b["mask"], dtype=torch.int64).view(rows, seq)
    targets = torch.tensor(b["targets"], dtype=torch.int64).view(rows, seq)
    return b, ids, mask, targets


def scores(m, ids, mask, targets, temperature=1.0, dtype=torch.float64):
    logits = m(ids, mask) / temperature
    logp = torch.log_softmax(logits.to(dtype), dim=-1)
    sel = targets >= 0
    lp = logp[sel].gather(-1, targets[sel].unsqueeze(-1)).squeeze(-1)
    ent = -(logp[sel].exp() * logp[sel]).sum(-1)
    return lp, ent


def cmd_golden(a):
    torch.set_num_threads(1)
    m = load(a.model)
    b, ids, mask, targets = read_batch(a.batch)
    lp, ent = scores(m, ids, mask, targets, a.temperature)
    g = torch.Generator().manual_seed(a.seed)
    r = torch.randn(lp.shape, generator=g, dtype=torch.float64)
    re = torch.randn(lp.shape, generator=g, dtype=torch.float64) * 0.5
    loss = (r * lp).sum() + (re * ent).sum()
    loss.backward()
    grads = {}
    for name, _ in m.names():
        gr = m.w(name).grad.double().flatten()
        grads[name] = {"norm": gr.norm().item(), "head": gr[: a.grad_head].tolist()}
    out = {
        "model": os.path.basename(os.path.normpath(a.model)), "batch": os.path.basename(a.batch),
        "temperature": a.temperature, "torch": torch.__version__,
        "logprobs": lp.tolist(), "entropy": ent.tolist(), "dlogp": r.tolist(), "dentropy": re.tolist(), "grads": grads,
    }
    with open(a.out, "w") as f:
        json.dump(out, f)
        f.write("\n")
    print("%s: %d scored tokens, logp in [%.3f, %.3f]" % (a.out, lp.numel(), lp.min().item(), lp.max().item()))


def cmd_logprobs(a):
    torch.set_num_threads(1)
    b, ids, mask, targets = read_batch(a.batch)
    with torch.no_grad():
        lp, _ = scores(load(a.model), ids, mask, targets)
        if a.against:
            other, _ = scores(load(a.against), ids, mask, targets)
            diff = (lp - other).abs().max().item()
            print("%s vs %s: %d tokens, max |Δ logp| = %.3g" % (a.model, a.against, lp.numel(), diff))
            if diff > a.tolerance:
                sys.exit(1)
            return
    json.dump(lp.tolist(), sys.stdout)
    print()


def cmd_bench(a):
    """Times the same work as agents/lm's benchmarks: a training step
    (forward, backward, Adam) over rows×seq tokens, batched generation
    (prompt of prompt tokens, gen new tokens, greedy, KV cache) and batch-1
    decode. Prints one JSON line of tokens per second."""
    from threadpoolctl import threadpool_info
    torch.set_num_threads(a.threads or os.cpu_count())
    torch.manual_seed(0)
    raw = {"architectures": ["LlamaForCausalLM"], "vocab_size": a.vocab, "hidden_size": a.hidden,
           "intermediate_size": a.intermediate, "num_hidden_layers": a.layers, "num_attention_heads": a.heads,
           "num_key_value_heads": a.kv_heads, "tie_word_embeddings": a.tied, "rope_theta": 10000.0}
    c = Config(raw)
    m = Model(c)
    tensors = {}
    for name, shape in m.names():
        tensors[name] = torch.ones(shape) if name.endswith("norm.weight") else 0.02 * torch.randn(shape)
    m.load(tensors)
    out = {"threads": torch.get_num_threads(), "params": sum(t.numel() for n, t in tensors.items()),
           "blas": [{k: i.get(k) for k in ("internal_api", "version", "architecture", "num_threads")} for i in threadpool_info()]}
    if "train" in a.what:
        opt = torch.optim.Adam(m.parameters(), lr=1e-4)
        ids = torch.randint(0, c.vocab, (a.rows, a.seq))
        mask = torch.ones_like(ids)
        tgt = torch.roll(ids, -1, 1)
        tgt[:, -1] = -1

        def step():
            opt.zero_grad()
            lp, _ = scores(m, ids, mask, tgt, dtype=torch.float32)
            (-lp.mean()).backward()
            opt.step()
        step()
        times = []
        for _ in range(a.repeat):
            t0 = time.perf_counter()
            step()
            times.append(time.perf_counter() - t0)
        out["train_tokens_per_s"] = a.rows * a.seq / sorted(times)[len(times) // 2]
    with torch.no_grad():
        for kind, batch in (("gen", a.gen_batch), ("decode", 1)):
            if kind not in a.what:
                continue
            ids = torch.randint(0, c.vocab, (batch, a.prompt))
            times = []

            def sample(logits):
                # What agents/lm's Generate does per step: draw from the
                # softmax (temperature 1) and keep the token's log-prob.
                logp = torch.log_softmax(logits[:, -1], dim=-1)
                tok = torch.multinomial(logp.exp(), 1)
                return tok, logp.gather(-1, tok)
            for _ in range(a.repeat):
                caches = []
                t0 = time.perf_counter()
                tok, _ = sample(m(ids, None, caches, 0))
                for i in range(a.gen - 1):
                    tok, _ = sample(m(tok, None, caches, a.prompt + i))
                times.append(time.perf_counter() - t0)
            out[kind + "_tokens_per_s"] = batch * a.gen / sorted(times)[len(times) // 2]
    print(json.dumps(out))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    mk = sub.add_parser("make")
    mk.add_argument("--arch", choices=["qwen2", "qwen3", "llama"], required=True)
    mk.add_argument("--out", required=True)
    for k, v in (("vocab", 128), ("hidden", 64), ("intermediate", 96), ("layers", 2), ("heads", 4), ("kv-heads", 2),
                 ("head-dim", 0), ("seed", 1), ("shard-bytes", 0)):
        mk.add_argument("--" + k, type=int, default=v)
    mk.add_argument("--tied", action="store_true")
    mk.add_argument("--attention-bias", action="store_true")
    mk.add_argument("--dtype", choices=["F32", "BF16", "F16"], default="F32")
    mk.add_argument("--theta", type=float, default=10000.0)
    mk.add_argument("--eps", type=float, default=1e-6)
    mk.add_argument("--gain", type=float, default=1.0)
    mk.add_argument("--llama3", help="factor,low_freq_factor,high_freq_factor,original_max_position_embeddings")
    gd = sub.add_parser("golden")
    gd.add_argument("--model", required=True)
    gd.add_argument("--batch", required=True)
    gd.add_argument("--out", required=True)
    gd.add_argument("--temperature", type=float, default=1.0)
    gd.add_argument("--seed", type=int, default=7)
    gd.add_argument("--grad-head", type=int, default=64)
    lp = sub.add_parser("logprobs")
    lp.add_argument("--model", required=True)
    lp.add_argument("--batch", required=True)
    lp.add_argument("--against")
    lp.add_argument("--tolerance", type=float, default=0.0)
    bn = sub.add_parser("bench")
    for k, v in (("vocab", 4096), ("hidden", 512), ("intermediate", 1408), ("layers", 6), ("heads", 8), ("kv-heads", 4),
                 ("rows", 8), ("seq", 256), ("gen-batch", 64), ("prompt", 16), ("gen", 64), ("repeat", 3)):
        bn.add_argument("--" + k, type=int, default=v)
    bn.add_argument("--tied", action="store_true")
    bn.add_argument("--threads", type=int, default=0, help="torch threads (0: every core)")
    bn.add_argument("--what", default="train,gen,decode")
    a = ap.parse_args()
    {"make": cmd_make, "golden": cmd_golden, "logprobs": cmd_logprobs, "bench": cmd_bench}[a.cmd](a)


if __name__ == "__main__":
    main()
