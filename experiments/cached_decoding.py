"""Chapter 08's benchmark, part 3: greedy decoding with and without the key-value cache.

:class:`Decoder` is a small decoder-only language model of pre-norm layers built from the reference
``KVCacheSelfAttention``; :func:`generate` decodes greedily, recomputing the whole prefix at every step
or with the cache; :func:`measure_decoding` times both ways, counts their multiply-adds and checks that
they write identical tokens. :mod:`experiments.benchmark_attention_at_scale` is the program.
"""

from __future__ import annotations

import statistics
import time

import torch
from torch import nn

from attention_course.profiling import matmul_flops, record_ops
from autograder.reference.ch08_attention_at_scale import KVCacheSelfAttention


class Decoder(nn.Module):
    """A decoder-only language model of pre-norm layers built from the reference KVCacheSelfAttention."""

    def __init__(self, n_vocab, d_model, num_heads, num_layers, ff_dim, max_len):
        super().__init__()
        self.embedding = nn.Embedding(n_vocab, d_model)
        self.positions = nn.Embedding(max_len, d_model)
        self.layers = nn.ModuleList(
            nn.ModuleDict(
                {
                    "norm1": nn.LayerNorm(d_model),
                    "attention": KVCacheSelfAttention(d_model, num_heads),
                    "norm2": nn.LayerNorm(d_model),
                    "ff": nn.Sequential(nn.Linear(d_model, ff_dim), nn.ReLU(), nn.Linear(ff_dim, d_model)),
                }
            )
            for _ in range(num_layers)
        )
        self.norm = nn.LayerNorm(d_model)
        self.out = nn.Linear(d_model, n_vocab)

    def forward(self, tokens, caches=None):
        """tokens (B, T_new) -> (logits (B, T_new, n_vocab), one (K, V) cache per layer)."""
        T_past = 0 if caches is None else caches[0][0].shape[2]
        x = self.embedding(tokens) + self.positions(torch.arange(T_past, T_past + tokens.shape[1]))
        new_caches = []
        for i, layer in enumerate(self.layers):
            attended, cache = layer["attention"](layer["norm1"](x), None if caches is None else caches[i])
            x = x + attended
            x = x + layer["ff"](layer["norm2"](x))
            new_caches.append(cache)
        return self.out(self.norm(x)), new_caches


@torch.no_grad()
def generate(model, prompt, steps, use_cache):
    """Greedy generation of `steps` tokens after prompt (B, T_prompt): recomputing the prefix, or with the cache."""
    tokens, caches, new = prompt, None, prompt
    for _ in range(steps):
        if use_cache:
            logits, caches = model(new, caches)
        else:
            logits, _ = model(tokens)
        new = logits[:, -1].argmax(-1, keepdim=True)
        tokens = torch.cat([tokens, new], dim=1)
    return tokens[:, prompt.shape[1] :]


def measure_decoding(generated, repeats, config) -> dict:
    torch.manual_seed(0)
    model = Decoder(max_len=max(generated) + 8, **config).eval()
    prompt = torch.randint(0, config["n_vocab"], (1, 8))
    result = {
        "model": config,
        "prompt_tokens": 8,
        "generated": list(generated),
        "identical_tokens": [],
        "recompute": {"seconds": [], "all_seconds": [], "multiply_adds": []},
        "cache": {"seconds": [], "all_seconds": [], "multiply_adds": []},
    }
    print(
        f"\n3. greedy decoding, d_model {config['d_model']}, {config['num_heads']} heads, "
        f"{config['num_layers']} layers, "
        f"d_ff {config['ff_dim']}, {config['n_vocab']} words, prompt of 8 tokens"
    )
    print(
        f"{'tokens':>7} {'identical':>10} {'recompute (s)':>14} {'cache (s)':>10} {'speed-up':>9} "
        f"{'multiply-adds, recompute':>25} {'with the cache':>15}"
    )
    for steps in generated:
        outputs = {}
        for way, use_cache in (("recompute", False), ("cache", True)):
            tokens, ops = record_ops(generate, model, prompt, steps, use_cache)
            outputs[way] = tokens
            result[way]["multiply_adds"].append(matmul_flops(ops))
            del ops
            times = []
            for _ in range(repeats):
                start = time.perf_counter()
                again = generate(model, prompt, steps, use_cache)
                times.append(time.perf_counter() - start)
                assert torch.equal(again, tokens), "generation is not deterministic"
            result[way]["all_seconds"].append(times)
            result[way]["seconds"].append(statistics.median(times))
        result["identical_tokens"].append(bool(torch.equal(outputs["recompute"], outputs["cache"])))
        a, b = result["recompute"]["seconds"][-1], result["cache"]["seconds"][-1]
        print(
            f"{steps:>7} {str(result['identical_tokens'][-1]):>10} {a:>14.3f} {b:>10.3f} {a / b:>8.1f}x "
            f"{result['recompute']['multiply_adds'][-1]:>25,} {result['cache']['multiply_adds'][-1]:>15,}",
            flush=True,
        )
    return result
