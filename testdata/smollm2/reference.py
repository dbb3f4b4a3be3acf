"""The exact logits of testdata/smollm2/greedy-llamacpp.json.gz: for each
prompt, llama.cpp's greedy continuation fed to the float64 reference of
testdata/gguf/reference.py, and each step's eight likeliest tokens (and
llama.cpp's top two) with their logits. Not run by the tests (numpy and
gguf from PyPI):

    /tmp/ref/bin/python testdata/smollm2/reference.py MODEL.gguf testdata/smollm2/greedy-llamacpp.json.gz
"""
import gzip, json, os, sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'gguf'))
from reference import Model  # noqa: E402

model, path = Model(sys.argv[1]), sys.argv[2]
doc = json.load(gzip.open(path))
for p in doc['prompts']:
    logits = model.logits(p['ids'] + p['greedy'][:-1])
    start, p['exact'] = len(p['ids']) - 1, []
    for k, st in enumerate(p['steps']):
        row = logits[start + k]
        top = [int(i) for i in np.argsort(-row)[:8]]
        top += [int(i) for i in (st[0], st[2]) if int(i) not in top]
        p['exact'].append([[i, round(float(row[i]), 6)] for i in top])
with gzip.open(path, 'wt') as f:
    json.dump(doc, f, separators=(',', ':'))
