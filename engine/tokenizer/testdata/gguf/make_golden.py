#!/usr/bin/env python3
"""Writes <name>.llamacpp.jsonl.gz: llama.cpp's ids for the texts below with
each tokenizer-only GGUF of this folder (not run by the tests).

The texts are the golden texts of testdata/{llama3,qwen3,mistral}-tokenizer
(every vocabulary gets all of them), the hard cases below, and the NFC form
of each text that is not in NFC (see FromGGUF on Qwen). Each row:

  {"text": ..., "ids": [...], "ids_special": [...], "ids_add": [...]}

mistral-flat.llamacpp.jsonl.gz has the ids for mistral.gguf.gz with every
score -1000 (see flat_scores).

ids is llama_tokenize(vocab, text, add_special=false, parse_special=false),
ids_special the same with parse_special=true, ids_add with add_special=true
(the BOS/EOS the file's add_bos_token/add_eos_token ask for).

TOKENIZE is a small C program that loads a GGUF with
llama_model_params.vocab_only = true and prints those three lists as one
JSON line for each hex-encoded text line on its standard input, compiled
against the prebuilt libllama of the npm package
@node-llama-cpp/linux-x64@3.21.1 with the llama.cpp headers of
node-llama-cpp's git bundle, as bench/vs-llamacpp.sh does for its bench.

  python3 engine/tokenizer/testdata/gguf/make_golden.py TOKENIZE
"""
import gzip
import json
import os
import subprocess
import sys
import tempfile
import unicodedata

import gguf

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..", "..", "..")
VOCABS = ("smollm2", "llama3", "qwen3", "mistral")

# llama.cpp's convert_hf_to_gguf_update.py test text, which tells the
# pre-tokenizers apart.
CHKTXT = '\n \n\n \n\n\n \t \t\t \t\n  \n   \n    \n     \n🚀 (normal) 😶\u200d🌫️ (multiple emojis concatenated) ✅ 🦙🦙 3 33 333 3333 33333 333333 3333333 33333333 3.3 3..3 3...3 កាន់តែពិសេសអាច😁 ?我想在apple工作1314151天～ ------======= нещо на Български \'\'\'\'\'\'```````""""......!!!!!!?????? I\'ve been \'told he\'s there, \'RE you sure? \'M not sure I\'ll make it, \'D you like some tea? We\'Ve a\'lL'

HARD = [
    CHKTXT,
    # digits
    "1", "12", "123", "1234", "12345678901234567890", "3.14159", "1,000,000",
    "v1.2.3", "a1b22c333d4444", "٣٤٥ ١٢", "x²³ ½", "Ⅻ ⅻ", "１２３４", "-42", "0x1F",
    # whitespace
    " ", "  ", "   ", " " * 16, " " * 17, " " * 33, "a  b", "a   b", "a    b",
    "a\tb", "\t\t", "a \t b", " \n ", "   leading", "trailing   ", "a \u00a0b",
    "a\u3000b", "a\u200bb", "\u2028", "x\u2029y", "\u000b\u000c", "\u0085",
    "    def f():\n        return 1\n", "\tif x:\n\t\treturn\n",
    # newlines
    "\n", "\n\n\n", "a\nb", "a\n\nb", "a\r\nb", "\r\n\r\n", "\r", "line 1\nline 2\n",
    " \n\n \n", "end.\n\n\n\nNext",
    # emoji
    "🚀", "👨\u200d👩\u200d👧\u200d👦", "😶\u200d🌫️", "🦙🦙", "✅ done", "👍🏽", "🇫🇷",
    "🦩",
    # CJK and other scripts
    "我想在apple工作1314151天～", "日本語のテキストです。", "한국어 텍스트", "中文，标点。",
    "Ελληνικά κείμενα", "עברית", "العربية", "हिन्दी", "ไทย",
    # special-token text in plain text
    "<|begin_of_text|>", "<|eot_id|>hello", "<|start_header_id|>user<|end_header_id|>\n\nHi",
    "<|im_start|>user\nhi<|im_end|>\n", "<|endoftext|>", "<s>", "</s>", "<unk>",
    "<s> [INST] hi [/INST]", "<think>\nhmm\n</think>\n\n", "<tool_call>{}</tool_call>",
    "<|fim_prefix|>a<|fim_suffix|>b<|fim_middle|>", "<|repo_name|>x", "<|im_end|><|im_end|>",
    "a<|im_start|>b", " <|im_start|> ", "<<|im_start|>>", "<|im_start", "<0x0A>", "<0x41>",
    # leading spaces and edges
    " hello", "  hello", "   hello", " 1", " !", "!", "'", "'s", "'S", "I'VE", "don't",
    "she'll", "'ſ", "ſ", "Hello", "HELLO", "hello world", "Hello, world!",
    # normalisation
    "e\u0301", "caf\u00e9 cafe\u0301", "\u212b", "\u1112\u1161\u11ab", "ﬁne", "Ａ", "ñ n\u0303",
    # long words and mixed
    "a" * 100, "supercalifragilisticexpialidocious", "https://example.com/a?b=c&d=e#f",
    "foo_bar.baz(qux) { return x[1] + y->z; }", "naïve café résumé", "$100.00 + 5%",
    "▁hello", "▁▁", "hello▁world", "\u0000", "a\u0000b",
    # bytes SmolLM2's vocabulary lacks, between tokens that merge
    "!\u0004!", "\u0004", "a\u0013b", "..\u001d..", "\U00040000",
]


def texts():
    seen, out = set(), []
    for name in ("llama3", "qwen3", "mistral"):
        path = os.path.join(ROOT, "testdata", name + "-tokenizer", "tokenize.jsonl.gz")
        with gzip.open(path, "rt", encoding="utf-8") as f:
            for line in f:
                t = json.loads(line)["text"]
                if t not in seen:
                    seen.add(t)
                    out.append(t)
    for t in HARD:
        if t not in seen:
            seen.add(t)
            out.append(t)
    # llama.cpp does not normalise; Qwen's tokenizer.json asks for NFC.
    for t in list(out):
        n = unicodedata.normalize("NFC", t)
        if n not in seen:
            seen.add(n)
            out.append(n)
    return out


def flat_scores(src, dst):
    """Copies a SentencePiece GGUF with every score -1000, as gguf-py's
    LlamaHfVocab writes them when convert_hf_to_gguf.py has only a
    tokenizer.json: llama.cpp then merges leftmost first."""
    r = gguf.GGUFReader(src)
    w = gguf.GGUFWriter(dst, r.fields["general.architecture"].contents())
    for key, field in r.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        value = field.contents()
        if key == "tokenizer.ggml.scores":
            value = [-1000.0] * len(value)
        if field.types[0] == gguf.GGUFValueType.ARRAY:
            w.add_key_value(key, value, field.types[0], sub_type=field.types[-1])
        else:
            w.add_key_value(key, value, field.types[0])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    tokenize = sys.argv[1]
    all_texts = texts()
    hexed = "".join(t.encode("utf-8").hex() + "\n" for t in all_texts)
    for name in VOCABS + ("mistral-flat",):
        with tempfile.TemporaryDirectory() as d:
            model = os.path.join(d, name + ".gguf")
            with gzip.open(os.path.join(HERE, name.removesuffix("-flat") + ".gguf.gz")) as f, open(model, "wb") as g:
                g.write(f.read())
            if name.endswith("-flat"):
                flat_scores(model, model + ".flat")
                model += ".flat"
            out = subprocess.run([tokenize, model], input=hexed.encode(), capture_output=True, check=True).stdout
        lines = out.decode().splitlines()
        assert len(lines) == len(all_texts), (name, len(lines))
        path = os.path.join(HERE, name + ".llamacpp.jsonl.gz")
        with gzip.GzipFile(path, "wb", mtime=0) as g:
            for text, line in zip(all_texts, lines):
                row = {"text": text, **json.loads(line)}
                g.write((json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8"))
        print(name, len(lines), "texts,", os.path.getsize(path), "bytes gzipped")


if __name__ == "__main__":
    main()
