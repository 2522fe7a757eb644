#!/usr/bin/env python3
"""Independent Gemma 3 reference (gguf + numpy) for the C++ prefill in apps/gemma3.

Weights are decoded by the `gguf` package's own dequantizers (not ours), the forward pass is
written here from the Gemma 3 description in float64 (norms, RoPE, softmax) / float32 (matmuls),
and the tokenizer is a separate implementation of the SentencePiece BPE rules. Writes
fixture.txt: for a few prompts, the token ids and the top-8 logits at every position, in a
line format the C++ test reads without a JSON parser:
  case <prompt as hex of its UTF-8 bytes>
  tokens <id> <id> ...
  top <position> <id>:<logit> ... (best first)

  .venv/bin/python apps/gemma3/reference/reference.py --model GGUF [--out fixture.txt]
"""
import argparse
import heapq
import json
import math
import pathlib

import numpy as np
import gguf

PROMPTS = [
    "The capital of France is",
    "def fibonacci(n):\n    return",
    "GNU GENERAL PUBLIC LICENSE  Version 3, 29 June 2007",
]
TOPK = 8


def field(reader, key, default=None):
    f = reader.fields.get(key)
    if f is None:
        return default
    return f.contents()


class Tokenizer:
    """SentencePiece BPE as stored in GGUF (tokenizer.ggml.model == 'llama')."""

    def __init__(self, reader):
        self.pieces = field(reader, "tokenizer.ggml.tokens")
        self.scores = field(reader, "tokenizer.ggml.scores")
        self.types = field(reader, "tokenizer.ggml.token_type")
        self.bos = field(reader, "tokenizer.ggml.bos_token_id")
        self.index = {}
        self.bytes = {}
        for i, (p, t) in enumerate(zip(self.pieces, self.types)):
            if t == 6:
                self.bytes[int(p[3:5], 16)] = i
            elif t in (1, 2, 4):
                self.index.setdefault(p, i)
        self.user = sorted((p for p, t in zip(self.pieces, self.types) if t == 4 and p),
                           key=len, reverse=True)

    def encode(self, text):
        out = [self.bos]  # user-defined pieces match the raw text; fragments get U+2581
        frag, i = "", 0
        while i < len(text):
            hit = next((u for u in self.user if text.startswith(u, i)), None)
            if hit:
                out += self._bpe(frag)
                frag = ""
                out.append(self.index[hit])
                i += len(hit)
            else:
                frag += text[i]
                i += 1
        return out + self._bpe(frag)

    def _bpe(self, text):
        syms = list(text.replace(" ", "\u2581"))
        if not syms:
            return []
        while True:  # merge the best-scoring adjacent pair (leftmost on ties)
            best = None
            for k in range(len(syms) - 1):
                j = self.index.get(syms[k] + syms[k + 1])
                if j is not None and self.types[j] == 1:
                    if best is None or self.scores[j] > best[0]:
                        best = (self.scores[j], k)
            if best is None:
                break
            k = best[1]
            syms[k:k + 2] = [syms[k] + syms[k + 1]]
        ids = []
        for s in syms:
            if s in self.index:
                ids.append(self.index[s])
            else:
                ids += [self.bytes[b] for b in s.encode("utf-8")]
        return ids


class Gemma3:
    def __init__(self, reader):
        a = "gemma3."
        self.d = field(reader, a + "embedding_length")
        self.layers = field(reader, a + "block_count")
        self.heads = field(reader, a + "attention.head_count")
        self.kv_heads = field(reader, a + "attention.head_count_kv")
        self.hd = field(reader, a + "attention.key_length")
        self.eps = field(reader, a + "attention.layer_norm_rms_epsilon")
        self.base_global = field(reader, a + "rope.freq_base")
        self.base_local = field(reader, a + "rope.freq_base_swa", 10000.0)
        self.window = field(reader, a + "attention.sliding_window")
        self.t = {t.name: t for t in reader.tensors}

    def w(self, name):
        t = self.t[name]
        return gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)

    def rmsnorm(self, x, w):
        x64 = x.astype(np.float64)
        return (x64 / np.sqrt((x64 * x64).mean(-1, keepdims=True) + self.eps) * w).astype(np.float32)

    def rope(self, x, base):  # x [T, H, hd], NeoX halves
        T, hd = x.shape[0], x.shape[-1]
        inv = base ** (-np.arange(0, hd // 2, dtype=np.float64) * 2 / hd)
        ang = np.arange(T, dtype=np.float64)[:, None] * inv[None, :]
        c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
        a, b = x[..., : hd // 2].astype(np.float64), x[..., hd // 2:].astype(np.float64)
        return np.concatenate([a * c - b * s, a * s + b * c], -1).astype(np.float32)

    def forward(self, ids):
        T, d, hd = len(ids), self.d, self.hd
        emb = self.w("token_embd.weight")
        h = emb[ids] * np.float32(math.sqrt(d))
        for l in range(self.layers):
            p = f"blk.{l}."
            is_global = (l + 1) % 6 == 0
            x = self.rmsnorm(h, self.w(p + "attn_norm.weight"))
            q = (x @ self.w(p + "attn_q.weight").T).reshape(T, self.heads, hd)
            k = (x @ self.w(p + "attn_k.weight").T).reshape(T, self.kv_heads, hd)
            v = (x @ self.w(p + "attn_v.weight").T).reshape(T, self.kv_heads, hd)
            q = self.rmsnorm(q, self.w(p + "attn_q_norm.weight"))
            k = self.rmsnorm(k, self.w(p + "attn_k_norm.weight"))
            base = self.base_global if is_global else self.base_local
            q, k = self.rope(q, base) / np.float32(math.sqrt(hd)), self.rope(k, base)
            i, j = np.arange(T)[:, None], np.arange(T)[None, :]
            allowed = j <= i
            if not is_global and self.window:
                allowed &= (i - j) < self.window
            group = self.heads // self.kv_heads
            ctx = np.zeros((T, self.heads, hd), np.float32)
            for hh in range(self.heads):
                s = (q[:, hh] @ k[:, hh // group].T).astype(np.float64)
                s = np.where(allowed, s, -np.inf)
                s = np.exp(s - s.max(-1, keepdims=True))
                s /= s.sum(-1, keepdims=True)
                ctx[:, hh] = (s.astype(np.float32) @ v[:, hh // group])
            a = ctx.reshape(T, -1) @ self.w(p + "attn_output.weight").T
            h = h + self.rmsnorm(a, self.w(p + "post_attention_norm.weight"))
            x = self.rmsnorm(h, self.w(p + "ffn_norm.weight"))
            g = x @ self.w(p + "ffn_gate.weight").T
            u = x @ self.w(p + "ffn_up.weight").T
            g64 = g.astype(np.float64)
            gelu = 0.5 * g64 * (1 + np.tanh(math.sqrt(2 / math.pi) * (g64 + 0.044715 * g64 ** 3)))
            m = (gelu * u).astype(np.float32) @ self.w(p + "ffn_down.weight").T
            h = h + self.rmsnorm(m, self.w(p + "post_ffw_norm.weight"))
        h = self.rmsnorm(h, self.w("output_norm.weight"))
        return h @ emb.T


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--out", default=str(pathlib.Path(__file__).with_name("fixture.txt")))
    args = ap.parse_args()
    reader = gguf.GGUFReader(args.model)
    tok, model = Tokenizer(reader), Gemma3(reader)
    lines = ["# Gemma 3 270M Q4_K_M (sha256 a5fd3b62...) reference logits from", 
             "# apps/gemma3/reference/reference.py (gguf dequantizers + numpy forward)"]
    for prompt in PROMPTS:
        ids = tok.encode(prompt)
        logits = model.forward(ids)
        lines.append("case " + prompt.encode("utf-8").hex())
        lines.append("tokens " + " ".join(str(int(i)) for i in ids))
        for pos, row in enumerate(logits):
            idx = np.argsort(-row)[:TOPK]
            lines.append(f"top {pos} " + " ".join(f"{int(i)}:{float(row[i]):.4f}" for i in idx))
        print(prompt.replace("\n", "\\n"), ids, lines[-1])
    pathlib.Path(args.out).write_text("\n".join(lines) + "\n")

if __name__ == "__main__":
    main()
