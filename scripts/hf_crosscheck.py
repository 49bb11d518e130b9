#!/usr/bin/env python3
"""Cross-checks agenttrainer's language models against Hugging Face transformers.

Where `transformers` and `tokenizers` are installed (a GPU box; not this
project's CI machine), this loads the model directories agenttrainer writes
with `AutoModelForCausalLM.from_pretrained` — the way a user's PyTorch code
would — and compares, token by token:

  models     `agenttrainer lm score` (on each --devices entry) against
             transformers' own Qwen2 / Qwen3 / Llama modelling code, for
             directories written by `agenttrainer lm init` as they are
             (F32 and BF16, tied and separate heads) and for sharpened copies
             (weights scaled up so that the log-probabilities spread), with
             explicit head_dim, q/k/v biases, q/k norms and llama3 RoPE
             scaling; batches mix lengths so the project's left padding is
             checked against unpadded sequences.
  tokenizer  `agenttrainer lm tokenize` against `AutoTokenizer` (the Rust
             `tokenizers` library) on the same tokenizer.json, over generated
             strings (multilingual, combining marks, code, whitespace runs,
             digits, emoji sequences, special tokens inside text).
  chat       `lm tokenize --chat` against `apply_chat_template` (transformers'
             own Jinja environment) for single- and multi-turn conversations,
             with and without the generation prompt and Qwen3's
             enable_thinking.

With --reference ours (no transformers needed) the model checks run against
scripts/lm_reference.py instead, to test this script's plumbing.

  python3 scripts/hf_crosscheck.py --bin ./agenttrainer --tokenizer DIR --out OUTDIR [--devices cpu,cuda]

Writes OUTDIR/crosscheck.md and crosscheck.json; exits 1 when any check fails.
"""
import argparse
import importlib.util
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import traceback

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("lm_reference", os.path.join(HERE, "lm_reference.py"))
ref = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ref)

# Log-probabilities of float32 models on a few dozen tokens agree to ~1e-5;
# the tolerance leaves room for different summation orders on a GPU.
LOGP_TOL = 2e-3


def run(cmd, stdin=None):
    p = subprocess.run(cmd, input=stdin, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("%s: exit %d\n%s" % (" ".join(cmd), p.returncode, p.stderr[-2000:]))
    return p.stdout


def model_cases(a, work):
    """The model directories to check: (name, dir)."""
    cases = [
        ("qwen2 f32 untied", ["--arch", "qwen2", "--tied=false"], None),
        ("qwen3 f32 tied head_dim 32", ["--arch", "qwen3", "--head-dim", "32"], None),
        ("llama f32 untied llama3-rope", ["--arch", "llama", "--tied=false"],
         {"rope_theta": 500000.0, "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                                   "high_freq_factor": 4.0, "original_max_position_embeddings": 16}}),
        ("llama bf16 tied", ["--arch", "llama", "--dtype", "bf16"], None),
    ]
    out = []
    for i, (name, flags, patch) in enumerate(cases):
        d = os.path.join(work, "m%d" % i)
        shutil.rmtree(d, ignore_errors=True)
        run([a.bin, "lm", "init", "--hidden", "64", "--layers", "2", "--heads", "4", "--kv-heads", "2",
             "--vocab", a.tokenizer, "--seed", str(i + 1), "--out", d] + flags)
        if patch:
            with open(os.path.join(d, "config.json")) as f:
                cfg = json.load(f)
            cfg.update(patch)
            with open(os.path.join(d, "config.json"), "w") as f:
                json.dump(cfg, f, indent=2)
        out.append((name + " (as written)", d))
        out.append((name + " (sharpened)", sharpen(d, d + "s", seed=100 + i)))
    return out


def sharpen(src, dst, seed):
    """A copy of src with weights scaled so the outputs are far from uniform."""
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)
    tensors = ref.read_model_dir(src)
    g = torch.Generator().manual_seed(seed)
    for name, t in tensors.items():
        if name.endswith("norm.weight"):
            tensors[name] = 0.5 + torch.rand(t.shape, generator=g)
        elif name.endswith(".bias"):
            tensors[name] = 0.5 * torch.randn(t.shape, generator=g)
        else:
            tensors[name] = t * 6.0
    with open(os.path.join(src, "config.json")) as f:
        dtype = "BF16" if json.load(f).get("torch_dtype") == "bfloat16" else "F32"
    for f in os.listdir(dst):
        if f.endswith(".safetensors") or f.endswith(".index.json"):
            os.remove(os.path.join(dst, f))
    ref.write_model_dir(dst, tensors, sorted(tensors), dtype, 0)
    return dst


def sequences(vocab, seed):
    r = random.Random(seed)
    return [[r.randrange(vocab) for _ in range(n)] for n in (3, 9, 17, 40, 64, 5)]


def hf_logprobs(d, seqs):
    import transformers
    kw = {"attn_implementation": "eager"}
    try:
        m = transformers.AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32, **kw)
    except TypeError:
        m = transformers.AutoModelForCausalLM.from_pretrained(d, torch_dtype=torch.float32, **kw)
    m.eval()
    out = []
    with torch.no_grad():
        for s in seqs:
            logits = m(torch.tensor([s])).logits[0].double()
            lp = torch.log_softmax(logits, -1)
            out.append([lp[i - 1, s[i]].item() for i in range(1, len(s))])
    return out


def ours_reference_logprobs(d, seqs):
    m = ref.load(d)
    out = []
    with torch.no_grad():
        for s in seqs:
            ids = torch.tensor([s])
            logits = m(ids, torch.ones_like(ids)).double()[0]
            lp = torch.log_softmax(logits, -1)
            out.append([lp[i - 1, s[i]].item() for i in range(1, len(s))])
    return out


def agenttrainer_logprobs(a, d, seqs, device):
    lines = "".join(json.dumps({"prompt_ids": s[:1], "completion_ids": s[1:]}) + "\n" for s in seqs)
    got = [json.loads(l)["logprobs"] for l in run([a.bin, "lm", "score", "--model", d, "--device", device], lines).splitlines()]
    if len(got) != len(seqs):
        raise RuntimeError("lm score answered %d lines for %d" % (len(got), len(seqs)))
    return got


def check_models(a, work, results):
    refname = "transformers" if a.reference == "transformers" else "lm_reference.py"
    reflp = hf_logprobs if a.reference == "transformers" else ours_reference_logprobs
    for name, d in model_cases(a, work):
        with open(os.path.join(d, "config.json")) as f:
            vocab = json.load(f)["vocab_size"]
        seqs = sequences(vocab, seed=len(results))
        want = reflp(d, seqs)
        spread = float(np.std([x for row in want for x in row]))
        for dev in a.devices:
            got = agenttrainer_logprobs(a, d, seqs, dev)
            diff = max(abs(g - w) for gr, wr in zip(got, want) for g, w in zip(gr, wr))
            ok = diff <= LOGP_TOL and all(len(g) == len(w) for g, w in zip(got, want))
            results.append({"check": "model", "case": name, "device": dev, "reference": refname,
                            "tokens": sum(len(w) for w in want), "max_abs_diff": diff, "logp_sd": spread, "ok": ok})
            print("model %-45s %-5s vs %s: max |Δ logp| %.2e over %d tokens (logp sd %.2f) %s" % (
                name, dev, refname, diff, results[-1]["tokens"], spread, "ok" if ok else "FAIL"), flush=True)


# --- tokenizer strings ---

PIECES = [
    "Hello", " world", "  ", "\n", "\n\n", "\t", "   \n  ", "123", "4567", "1,000,000", "3.14159", "-42",
    "naïve", "café", "e\u0301", "a\u0300\u0301\u0302", "Ω", "straße", "İstanbul", "ǅ",
    "日本語のテキスト", "中文分词测试", "한국어", "Привет, мир", "مرحبا بالعالم", "שלום", "हिन्दी", "ไทย",
    "😀", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇫🇷", "\u200d", "\ufeff",
    "def f(x):\n    return x**2\n", "for (int i = 0; i < n; ++i) {}", "if x != y: pass", "<div class=\"a\">",
    "'s", "'re", "'ll", "'VE", "don't", "I'M", "$", "@@", "...", "—", "«»", "\\n", "```python\n", "```",
    "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>", "<tool_call>", "<|im_start", "im_end|>",
]


def strings(n, seed):
    r = random.Random(seed)
    out = list(PIECES)
    while len(out) < n:
        k = r.randint(1, 8)
        s = "".join(r.choice(PIECES) if r.random() < 0.7 else rand_chars(r) for _ in range(k))
        out.append(s)
    return out


def rand_chars(r):
    ranges = [(0x20, 0x7e), (0xa0, 0x24f), (0x300, 0x36f), (0x370, 0x3ff), (0x400, 0x4ff), (0x4e00, 0x4fff),
              (0x3040, 0x30ff), (0xac00, 0xacff), (0x1f300, 0x1f64f), (0x2000, 0x206f), (0x0600, 0x06ff)]
    lo, hi = r.choice(ranges)
    return "".join(chr(r.randint(lo, hi)) for _ in range(r.randint(1, 6)))


def tokenizer_model(a, work):
    """A one-layer model directory carrying the tokenizer (lm tokenize reads model directories)."""
    d = os.path.join(work, "tok")
    if not os.path.exists(d):
        run([a.bin, "lm", "init", "--arch", "qwen3", "--hidden", "32", "--layers", "1", "--heads", "2",
             "--vocab", a.tokenizer, "--out", d])
    return d


def check_tokenizer(a, tokdir, results):
    import transformers
    tok = transformers.AutoTokenizer.from_pretrained(tokdir)
    ss = strings(a.strings, seed=7)
    lines = "".join(json.dumps(s) + "\n" for s in ss)
    got = [json.loads(l)["ids"] for l in run([a.bin, "lm", "tokenize", "--model", tokdir], lines).splitlines()]
    bad = [(s, g, tok(s, add_special_tokens=False)["input_ids"]) for s, g in zip(ss, got)]
    bad = [b for b in bad if b[1] != b[2]]
    ok = len(got) == len(ss) and not bad
    results.append({"check": "tokenizer", "strings": len(ss), "mismatches": len(bad), "ok": ok,
                    "first_mismatches": [{"text": s, "ours": g, "hf": w} for s, g, w in bad[:5]]})
    print("tokenizer: %d strings, %d mismatches vs transformers %s (tokenizers %s) %s" % (
        len(ss), len(bad), transformers.__version__, __import__("tokenizers").__version__, "ok" if ok else "FAIL"), flush=True)
    for s, g, w in bad[:5]:
        print("  %r\n    ours %s\n    hf   %s" % (s, g, w))


CONVERSATIONS = [
    [{"role": "user", "content": "What is 2+3?"}],
    [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Name a colour."}],
    [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello! How can I help?"},
     {"role": "user", "content": "Move left.\n\n```Left```"}],
    [{"role": "system", "content": "Solve it."}, {"role": "user", "content": "2 + 2 = ?"},
     {"role": "assistant", "content": "<think>\nadd\n</think>\n\n4"}, {"role": "user", "content": "and 3+3?"},
     {"role": "assistant", "content": "6"}],
]


def check_chat(a, tokdir, results):
    import transformers
    tok = transformers.AutoTokenizer.from_pretrained(tokdir)
    bad, n = [], 0
    for conv in CONVERSATIONS:
        for gen in (True, False):
            for think in (None, True, False):
                kw = {} if think is None else {"enable_thinking": think}
                want = tok.apply_chat_template(conv, tokenize=False, add_generation_prompt=gen, **kw)
                wids = tok(want, add_special_tokens=False)["input_ids"]
                cmd = [a.bin, "lm", "tokenize", "--model", tokdir, "--chat"]
                if gen:
                    cmd.append("--generation-prompt")
                if think is not None:
                    cmd += ["--var", "enable_thinking=%s" % ("true" if think else "false")]
                got = json.loads(run(cmd, json.dumps(conv) + "\n"))
                n += 1
                if got["text"] != want or got["ids"] != wids:
                    bad.append({"conversation": conv, "generation_prompt": gen, "enable_thinking": think,
                                "ours": got["text"], "hf": want, "ids_equal": got["ids"] == wids})
    ok = not bad
    results.append({"check": "chat", "renderings": n, "mismatches": len(bad), "ok": ok, "first_mismatches": bad[:3]})
    print("chat template: %d renderings, %d mismatches vs apply_chat_template %s" % (n, len(bad), "ok" if ok else "FAIL"), flush=True)
    for b in bad[:3]:
        print("  ours %r\n  hf   %r" % (b["ours"], b["hf"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="./agenttrainer")
    ap.add_argument("--tokenizer", required=True, help="a directory with tokenizer.json and tokenizer_config.json (Qwen3's)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--devices", default="cpu", help="comma-separated devices for lm score")
    ap.add_argument("--reference", choices=["transformers", "ours"], default="transformers")
    ap.add_argument("--strings", type=int, default=10000)
    ap.add_argument("--only", default="models,tokenizer,chat")
    a = ap.parse_args()
    a.devices = a.devices.split(",")
    os.makedirs(a.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="hf-crosscheck-")
    results, errors = [], []
    steps = {"models": lambda: check_models(a, work, results),
             "tokenizer": lambda: check_tokenizer(a, tokenizer_model(a, work), results),
             "chat": lambda: check_chat(a, tokenizer_model(a, work), results)}
    for name in a.only.split(","):
        if name != "models" and a.reference != "transformers":
            continue
        try:
            steps[name]()
        except Exception:
            errors.append({"step": name, "error": traceback.format_exc()})
            print("%s: ERROR\n%s" % (name, traceback.format_exc()), flush=True)
    info = {"torch": torch.__version__}
    try:
        import transformers
        info["transformers"] = transformers.__version__
    except ImportError:
        pass
    with open(os.path.join(a.out, "crosscheck.json"), "w") as f:
        json.dump({"versions": info, "results": results, "errors": errors}, f, indent=1)
    shutil.rmtree(work, ignore_errors=True)
    failed = errors or any(not r["ok"] for r in results)
    print("crosscheck: %d checks, %d failed, %d errors (%s)" % (
        len(results), sum(not r["ok"] for r in results), len(errors), json.dumps(info)))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
