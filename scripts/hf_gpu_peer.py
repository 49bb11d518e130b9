#!/usr/bin/env python3
"""The peer of BenchmarkLMGRPOIteration on a GPU: transformers' Llama.

The same work as trainer/lm_bench_test.go's SmolLM-135M case, done by
Hugging Face transformers on PyTorch: 64 sequences (8 prompts × 8 samples)
of 128 prompt tokens sample 64 new tokens each (temperature 1, no top-k or
top-p, no stop), then one optimizer step trains on all 64 × 192 tokens in
micro-batches of 8 (token-mean log-probability loss). float32 with TF32 off,
as the project's CUDA device computes. Prints generated and trained tokens/s,
medians of --rounds after one warm-up.

  python3 scripts/hf_gpu_peer.py [--rounds 3] [--attn sdpa,eager]
"""
import argparse
import statistics
import time

import torch
import transformers


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--attn", default="sdpa,eager")
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    cfg = transformers.LlamaConfig(vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                                   num_attention_heads=9, num_key_value_heads=3, head_dim=64,
                                   tie_word_embeddings=True, max_position_embeddings=2048)
    print("torch %s, transformers %s, %s" % (torch.__version__, transformers.__version__, torch.cuda.get_device_name()))
    for attn in a.attn.split(","):
        torch.manual_seed(1)
        m = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation=attn).cuda().float()
        opt = torch.optim.AdamW(m.parameters(), lr=1e-5)
        prompts = torch.randint(0, cfg.vocab_size, (64, 128), device="cuda")

        def generate():
            m.eval()
            with torch.no_grad():
                return m.generate(prompts, attention_mask=torch.ones_like(prompts), do_sample=True, temperature=1.0,
                                  top_k=0, top_p=1.0, max_new_tokens=64, min_new_tokens=64, pad_token_id=0)

        def train(seqs):
            m.train()
            for i in range(0, 64, 8):
                ids = seqs[i:i + 8]
                logits = m(ids).logits[:, :-1].float()
                lp = torch.log_softmax(logits, -1).gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
                (-lp.mean() / 8).backward()
            opt.step()
            opt.zero_grad(set_to_none=True)

        gen_t, train_t = [], []
        for r in range(a.rounds + 1):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            seqs = generate()
            torch.cuda.synchronize()
            t1 = time.perf_counter()
            train(seqs)
            torch.cuda.synchronize()
            t2 = time.perf_counter()
            if r > 0:
                gen_t.append(t1 - t0)
                train_t.append(t2 - t1)
        g, t = statistics.median(gen_t), statistics.median(train_t)
        print("transformers %-5s smollm-135M: %.0f gen_tok/s, %.0f train_tok/s, %.3f iter/s (median of %d)" % (
            attn, 64 * 64 / g, 64 * 192 / t, 1 / (g + t), a.rounds), flush=True)
        del m, opt
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
