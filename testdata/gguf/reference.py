"""A float64 forward pass of a llama, qwen2 or qwen3 GGUF file, written
apart from Driftwood: numpy over the weights as gguf-py dequantises them,
with llama.cpp's meaning of the file (for llama, RoPE on adjacent pairs
over the file's row order and Llama 3's rope_freqs; for Qwen, RoPE on
halves, qwen2's q/k/v biases, qwen3's per-head q/k norms; tied embeddings
when output.weight is absent).
It makes the golden logits the tests hold Driftwood's GGUF path to; the
tests never run it (it needs numpy and gguf from PyPI):

    python3 -m venv /tmp/ref && /tmp/ref/bin/pip install gguf numpy
    /tmp/ref/bin/python testdata/gguf/reference.py golden FILE.gguf IDS N OUT.json.gz

writes the logits of every position of the prompt IDS (comma-separated)
and the N-token greedy continuation with each step's five likeliest
tokens.
"""
import gzip, json, sys

import gguf
import numpy as np


class Model:
    def __init__(self, path):
        r = gguf.GGUFReader(path)
        f = lambda k: r.fields[k].contents()
        arch = self.arch = f('general.architecture')
        if arch not in ('llama', 'qwen2', 'qwen3'):
            raise SystemExit(f'{path}: {arch}: only llama, qwen2 and qwen3 files')
        self.layers, self.hidden = f(arch + '.block_count'), f(arch + '.embedding_length')
        self.heads, self.kv_heads = f(arch + '.attention.head_count'), f(arch + '.attention.head_count_kv')
        self.eps, self.theta = f(arch + '.attention.layer_norm_rms_epsilon'), f(arch + '.rope.freq_base')
        key = arch + '.attention.key_length'
        self.head_dim = f(key) if key in r.fields else self.hidden // self.heads
        self.tensors = {t.name: t for t in r.tensors}
        self.inv = self.theta ** (-np.arange(0, self.head_dim, 2) / self.head_dim)
        if 'rope_freqs.weight' in self.tensors:
            self.inv = self.inv / self.w('rope_freqs.weight')
        self.emb = self.w('token_embd.weight')
        self.out = self.w('output.weight') if 'output.weight' in self.tensors else self.emb

    def w(self, name):
        t = self.tensors[name]
        a = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float64)
        return a.reshape([int(x) for x in reversed(t.shape)])

    def rms(self, x, w):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + self.eps) * w

    def rope(self, x, pos):  # x: (n, heads, head_dim)
        ang = pos[:, None] * self.inv[None, :]
        c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
        half = self.head_dim // 2
        if self.arch == 'llama':  # adjacent pairs
            x0, x1 = x[..., 0::2], x[..., 1::2]
        else:  # halves (llama.cpp's NEOX rotation)
            x0, x1 = x[..., :half], x[..., half:]
        y0, y1 = x0 * c - x1 * s, x0 * s + x1 * c
        y = np.empty_like(x)
        if self.arch == 'llama':
            y[..., 0::2], y[..., 1::2] = y0, y1
        else:
            y[..., :half], y[..., half:] = y0, y1
        return y

    def proj(self, h, b, name, heads):
        """A q/k/v projection into (n, heads, head_dim), with qwen2's bias."""
        y = h @ self.w(b + name + '.weight').T
        if self.arch == 'qwen2':
            y = y + self.w(b + name + '.bias')
        return y.reshape(len(h), heads, self.head_dim)

    def head_norm(self, x, b, name):
        """qwen3's RMS norm of each head before RoPE."""
        if self.arch != 'qwen3':
            return x
        return self.rms(x, self.w(b + name + '.weight'))

    def logits(self, seq):
        """The logits after every token of seq, (len(seq), vocab)."""
        n, hd, W = len(seq), self.head_dim, self.w
        pos = np.arange(n, dtype=np.float64)
        x = self.emb[seq]
        for l in range(self.layers):
            b = f'blk.{l}.'
            h = self.rms(x, W(b + 'attn_norm.weight'))
            q = self.rope(self.head_norm(self.proj(h, b, 'attn_q', self.heads), b, 'attn_q_norm'), pos)
            k = self.rope(self.head_norm(self.proj(h, b, 'attn_k', self.kv_heads), b, 'attn_k_norm'), pos)
            v = self.proj(h, b, 'attn_v', self.kv_heads)
            g = self.heads // self.kv_heads
            k, v = np.repeat(k, g, axis=1), np.repeat(v, g, axis=1)
            sc = np.einsum('qhd,khd->hqk', q, k) / np.sqrt(hd) + np.triu(np.full((n, n), -np.inf), 1)[None]
            sc = np.exp(sc - sc.max(-1, keepdims=True))
            sc /= sc.sum(-1, keepdims=True)
            x = x + np.einsum('hqk,khd->qhd', sc, v).reshape(n, self.heads * hd) @ W(b + 'attn_output.weight').T
            h = self.rms(x, W(b + 'ffn_norm.weight'))
            gate, up = h @ W(b + 'ffn_gate.weight').T, h @ W(b + 'ffn_up.weight').T
            x = x + ((gate / (1 + np.exp(-gate))) * up) @ W(b + 'ffn_down.weight').T
        return self.rms(x, W('output_norm.weight')) @ self.out.T


def golden(path, ids, n, out):
    """Writes the golden data in the format of testdata/models/*/golden.json.gz."""
    m = Model(path)
    ids = [int(i) for i in ids.split(',')]
    seq, steps = list(ids), []
    for _ in range(int(n)):
        row = m.logits(seq)[-1]
        top = np.argsort(-row)[:5]
        steps.append({'context_len': len(seq), 'top5': [[int(i), float(row[i])] for i in top]})
        seq.append(int(top[0]))
    doc = {'model': path.split('/')[-1], 'prompt': {'text': '', 'ids': ids},
           'prompt_logits': m.logits(ids).tolist(),
           'greedy': {'tokens': seq[len(ids):], 'steps': steps, 'logits_after_last_token': m.logits(seq)[-1].tolist()}}
    with gzip.open(out, 'wt') as f:
        json.dump(doc, f, separators=(',', ':'))


if __name__ == '__main__' and sys.argv[1:2] == ['golden']:
    golden(*sys.argv[2:6])
