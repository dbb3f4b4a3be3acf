// Package tokenizer encodes and decodes text with a Hugging Face
// tokenizer.json BPE model, of two kinds:
//
//   - byte-level BPE: Llama 3 / 3.1 / 3.2 (the Llama 3 split regex), Qwen2
//     and Qwen3 (Qwen's split regex after an NFC normalizer) and
//     GPT-2-style files such as SmolLM's (the GPT-2 regex, optionally
//     after a Digits split), with the ByteLevel decoder;
//   - SentencePiece-style BPE with byte fallback, as transformers converts
//     Llama 2, Mistral and TinyLlama (see spModel).
//
// Both have added tokens, ignore_merges and the post-processor's special
// tokens (AddSpecialTokens). Results match Hugging Face tokenizers byte
// for byte; anything else in a tokenizer.json is refused with an error
// naming it. Its truncation and padding are not read: transformers turns
// them off unless a call asks for them.
//
// FromGGUF builds the same tokenizers from the tokenizer.ggml.* metadata
// of a GGUF file (llama.cpp's format), by the same code: its results
// match llama.cpp's (see FromGGUF for where llama.cpp departs from the
// model's own tokenizer).
package tokenizer

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/driftwoodlabs/driftwood/internal/limitedfile"
)

// Tokenizer is a loaded BPE tokenizer. It is safe for concurrent use.
type Tokenizer struct {
	pre          preTokenizer // byte-level BPE
	sp           *spModel     // SentencePiece-style BPE when not nil
	vocab        *strTable    // what BPE works on (see setVocab) → id
	byBytes      *strTable    // raw bytes of model-vocabulary tokens → id
	byteIDs      [256]int32   // the single-byte tokens, -1 where the vocabulary lacks one
	byteGaps     bool         // see mergeWord
	prefix       []int32      // the post-processor's tokens before a sequence
	suffix       []int32      // and after it
	merges       pairTable    // pairKey(left, right) → merge
	ignoreMerges bool
	tokens       [][]byte // id → raw bytes
	special      []bool   // id → special flag of its added token
	added        addedMatcher
	cache        wordCache
	fingerprint  string
}

// maxID bounds token ids, so that a corrupt file cannot make Parse
// allocate gigabytes; real vocabularies stay far below it.
const maxID = 1 << 21

// Load reads a tokenizer.json file. A path ending in ".gz" is gunzipped.
func Load(path string) (*Tokenizer, error) {
	data, err := readJSON(path)
	if err != nil {
		return nil, err
	}
	return Parse(data, path)
}

// readJSON reads a tokenizer.json file, bounded, gunzipped when its path
// ends in ".gz".
func readJSON(path string) ([]byte, error) {
	data, err := limitedfile.Read(path, limitedfile.Tokenizer)
	if err != nil {
		return nil, err
	}
	if strings.HasSuffix(path, ".gz") {
		if data, err = gunzip(data, limitedfile.Tokenizer); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	return data, nil
}

// gunzip decompresses data, at most limit bytes of it, into a buffer
// sized from the gzip trailer.
func gunzip(data []byte, limit int64) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if n := len(data); n >= 4 {
		// ISIZE: the uncompressed length modulo 2^32, a hint only, capped
		// so that a corrupt trailer cannot demand gigabytes.
		hint := min(int(binary.LittleEndian.Uint32(data[n-4:])), 32*n, int(limit))
		buf.Grow(hint + bytes.MinRead)
	}
	if _, err := buf.ReadFrom(io.LimitReader(zr, limit+1)); err != nil {
		return nil, err
	}
	if int64(buf.Len()) > limit {
		return nil, fmt.Errorf("decompresses to more than %s, the most Driftwood reads for a tokenizer", limitedfile.Size(limit))
	}
	return buf.Bytes(), nil
}

// Parse builds a tokenizer from the contents of a tokenizer.json file;
// name (usually the path) is used in error messages.
func Parse(data []byte, name string) (*Tokenizer, error) {
	t, err := parse(data)
	if err != nil {
		return nil, fmt.Errorf("tokenizer %s: %w", name, err)
	}
	sum := sha256.Sum256(data)
	t.fingerprint = hex.EncodeToString(sum[:])
	return t, nil
}

// Encode returns the ids of text with no BOS added. Text that spells a
// special token is encoded as ordinary text; added tokens not marked
// special are still recognised, as in Hugging Face.
func (t *Tokenizer) Encode(text string) []int32 {
	return t.encode(text, false)
}

// EncodeWithSpecial is Encode, but every added token written literally in
// text becomes its id (leftmost-longest match), as a rendered chat
// template needs.
func (t *Tokenizer) EncodeWithSpecial(text string) []int32 {
	return t.encode(text, true)
}

func (t *Tokenizer) encode(text string, special bool) []int32 {
	if t.sp != nil {
		return t.encodeSentencePiece(text, special)
	}
	ids := make([]int32, 0, len(text)/4+1)
	emit := func(piece string) { ids = t.bpe(ids, piece) }
	for len(text) > 0 {
		start, end, id := t.added.find(text, special)
		if start < 0 {
			t.pre.each(text, emit)
			break
		}
		t.pre.each(text[:start], emit)
		ids = append(ids, id)
		text = text[end:]
	}
	return ids
}

// Decode concatenates the bytes of the tokens (added tokens as their text,
// no clean-up of spaces) and returns them as a string, with ill-formed
// UTF-8 replaced by U+FFFD as Hugging Face does. Unknown ids are skipped.
// For SentencePiece-style files the decoder's rules apply as well: a run
// of byte tokens that is not valid UTF-8 gives one U+FFFD per byte, and
// the leading space the encoder added is stripped.
func (t *Tokenizer) Decode(ids []int32) string {
	if t.sp != nil {
		return t.decodeSentencePiece(ids)
	}
	var buf []byte
	for _, id := range ids {
		buf = append(buf, t.TokenBytes(id)...)
	}
	return string(appendLossy(nil, buf))
}

// TokenBytes returns the raw bytes of one token, or nil for an id outside
// the vocabulary: for SentencePiece-style files "▁" is a space and
// "<0xNN>" the byte NN. The slice is shared and must not be modified.
func (t *Tokenizer) TokenBytes(id int32) []byte {
	if id < 0 || int(id) >= len(t.tokens) {
		return nil
	}
	return t.tokens[id]
}

// IsSpecial reports whether id is an added token marked special.
func (t *Tokenizer) IsSpecial(id int32) bool {
	return id >= 0 && int(id) < len(t.special) && t.special[id]
}

// TokenID looks a token up by its text, that is its raw bytes as
// TokenBytes returns them ("<|eot_id|>", " the"); of tokens with the same
// bytes the lowest id wins. Added tokens come first.
func (t *Tokenizer) TokenID(text string) (int32, bool) {
	if id, ok := t.added.byText[text]; ok {
		return id, true
	}
	return t.byBytes.get(text)
}

// AddedTokens returns the texts of all added tokens, ordered by id: the
// strings that EncodeWithSpecial recognises.
func (t *Tokenizer) AddedTokens() []string {
	tokens := slices.Clone(t.added.tokens)
	slices.SortFunc(tokens, func(a, b addedToken) int { return cmp.Compare(a.id, b.id) })
	out := make([]string, len(tokens))
	for i, a := range tokens {
		out[i] = a.content
	}
	return out
}

// VocabSize returns 1 + the highest token id.
func (t *Tokenizer) VocabSize() int { return len(t.tokens) }

// Fingerprint returns the hex SHA-256 of the tokenizer.json bytes as
// loaded (after gunzip), or for FromGGUF of the vocabulary, to check that
// saved token ids still apply.
func (t *Tokenizer) Fingerprint() string { return t.fingerprint }
