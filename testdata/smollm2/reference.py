# Scratch (not committed): float64 forward pass of a llama-arch GGUF, from gguf-py's dequantised weights,
# following llama.cpp's semantics (NORM rope on adjacent pairs over the file's row order) independently of Driftwood.
import sys, json, gzip, numpy as np, gguf
r = gguf.GGUFReader(sys.argv[1])
def f(k): return r.fields[k].contents()
arch = f('general.architecture'); L = f(arch+'.block_count'); H = f(arch+'.embedding_length')
nh = f(arch+'.attention.head_count'); nkv = f(arch+'.attention.head_count_kv'); eps = f(arch+'.attention.layer_norm_rms_epsilon')
theta = f(arch+'.rope.freq_base'); hd = H//nh
T = {t.name: t for t in r.tensors}
def W(name):
    t = T[name]
    a = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float64)
    return a.reshape([int(x) for x in reversed(t.shape)])
emb = W('token_embd.weight'); out = W('output.weight') if 'output.weight' in T else emb
def rms(x, w): return x / np.sqrt((x*x).mean(-1, keepdims=True) + eps) * w
def rope(x, pos):  # x: (n, heads, hd), adjacent pairs
    inv = theta ** (-np.arange(0, hd, 2)/hd)
    ang = pos[:, None] * inv[None, :]
    c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    x0, x1 = x[..., 0::2], x[..., 1::2]
    y = np.empty_like(x); y[..., 0::2] = x0*c - x1*s; y[..., 1::2] = x0*s + x1*c
    return y
doc = json.load(gzip.open(sys.argv[2]))
res = []
for pi in map(int, sys.argv[3].split(',')):
    p = doc['prompts'][pi]
    seq = p['ids'] + p['greedy'][:-1]; n = len(seq); pos = np.arange(n, dtype=np.float64)
    x = emb[seq]
    for l in range(L):
        b = f'blk.{l}.'
        h = rms(x, W(b+'attn_norm.weight'))
        q = (h @ W(b+'attn_q.weight').T).reshape(n, nh, hd); k = (h @ W(b+'attn_k.weight').T).reshape(n, nkv, hd)
        v = (h @ W(b+'attn_v.weight').T).reshape(n, nkv, hd)
        q, k = rope(q, pos), rope(k, pos)
        g = nh // nkv; k = np.repeat(k, g, axis=1); v = np.repeat(v, g, axis=1)
        sc = np.einsum('qhd,khd->hqk', q, k) / np.sqrt(hd)
        sc = sc + np.triu(np.full((n, n), -np.inf), 1)[None]
        sc = np.exp(sc - sc.max(-1, keepdims=True)); sc /= sc.sum(-1, keepdims=True)
        a = np.einsum('hqk,khd->qhd', sc, v).reshape(n, H)
        x = x + a @ W(b+'attn_output.weight').T
        h = rms(x, W(b+'ffn_norm.weight'))
        gt, up = h @ W(b+'ffn_gate.weight').T, h @ W(b+'ffn_up.weight').T
        x = x + ((gt / (1 + np.exp(-gt))) * up) @ W(b+'ffn_down.weight').T
    logits = rms(x, W('output_norm.weight')) @ out.T
    start = len(p['ids']) - 1
    steps = []
    for k, st in enumerate(p['steps']):
        row = logits[start+k]
        top = list(np.argsort(-row)[:8])
        for extra in (st[0], st[2]):
            if extra not in top: top.append(extra)
        steps.append([[int(i), round(float(row[i]), 6)] for i in top])
    res.append({'prompt': pi, 'top': steps})
    print('prompt', pi, 'done', file=sys.stderr)
json.dump(res, open(sys.argv[4], 'w'))
