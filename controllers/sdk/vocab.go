package sdk

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Vocab is the model's vocabulary as the host hands it over: the raw
// bytes of every token id (special tokens: their text) and which ids are
// special.
type Vocab struct {
	// Tokens holds the bytes of each id; empty for ids without a token.
	Tokens [][]byte
	// Special marks special tokens such as <|eot_id|>.
	Special []bool

	byteTok *[256]int32 // single-byte tokens, built on first use by Spell
}

// Vocabulary entry layout: u8 flags, u16 length, then the bytes.
const (
	vocabSpecial   = 1 << 0
	vocabEntryHead = 3
)

// EncodeVocab lays tokens out in the ABI's vocabulary format: for each id
// in order, u8 flags (bit 0: special), u16 little-endian length, then the
// bytes. special may be shorter than tokens (missing entries are not
// special). Tokens longer than 65535 bytes are cut.
func EncodeVocab(tokens [][]byte, special []bool) []byte {
	size := 0
	for _, t := range tokens {
		size += vocabEntryHead + min(len(t), 0xffff)
	}
	out := make([]byte, 0, size)
	for i, t := range tokens {
		t = t[:min(len(t), 0xffff)]
		var flags byte
		if i < len(special) && special[i] {
			flags |= vocabSpecial
		}
		out = append(out, flags)
		out = binary.LittleEndian.AppendUint16(out, uint16(len(t)))
		out = append(out, t...)
	}
	return out
}

// ParseVocab reads n entries in the ABI's vocabulary format. It copies
// blob, so the result stays valid after the host's buffer is gone.
func ParseVocab(blob []byte, n int) (*Vocab, error) {
	if n < 0 {
		return nil, fmt.Errorf("vocabulary: negative size %d", n)
	}
	data := bytes.Clone(blob)
	v := &Vocab{Tokens: make([][]byte, n), Special: make([]bool, n)}
	off := 0
	for id := range n {
		if len(data)-off < vocabEntryHead {
			return nil, fmt.Errorf("vocabulary: entry %d of %d is cut short", id, n)
		}
		flags := data[off]
		size := int(binary.LittleEndian.Uint16(data[off+1:]))
		off += vocabEntryHead
		if len(data)-off < size {
			return nil, fmt.Errorf("vocabulary: token %d needs %d bytes, %d left", id, size, len(data)-off)
		}
		v.Tokens[id] = data[off : off+size : off+size]
		v.Special[id] = flags&vocabSpecial != 0
		off += size
	}
	if off != len(data) {
		return nil, errors.New("vocabulary: bytes left after the last entry")
	}
	return v, nil
}

// Len returns the number of token ids.
func (v *Vocab) Len() int { return len(v.Tokens) }

// IsSpecial reports whether id is a special token.
func (v *Vocab) IsSpecial(id int32) bool {
	return id >= 0 && int(id) < len(v.Special) && v.Special[id]
}

// Valid reports whether id is inside the vocabulary.
func (v *Vocab) Valid(id int32) bool { return id >= 0 && int(id) < len(v.Tokens) }

// endOfTurnTexts are the end-of-turn markers of common chat templates,
// most preferred first.
var endOfTurnTexts = []string{"<|eot_id|>", "<|im_end|>", "<|end_of_text|>", "<|endoftext|>", "</s>"}

// EndOfTurn returns the special token that ends an assistant turn
// (<|eot_id|> for Llama 3; <|im_end|>, <|end_of_text|>, <|endoftext|> or
// </s> for vocabularies without it), or false when there is none.
func (v *Vocab) EndOfTurn() (int32, bool) {
	for _, text := range endOfTurnTexts {
		for id, t := range v.Tokens {
			if v.Special[id] && string(t) == text {
				return int32(id), true
			}
		}
	}
	return -1, false
}

// Spell returns tokens whose bytes are exactly b: h's tokenization of b
// when b is UTF-8 and that tokenization spells it back, else one
// single-byte token per byte. It returns nil when b cannot be spelled
// (some byte has no token) or is empty. h may be nil.
func (v *Vocab) Spell(h Host, b []byte) []int32 {
	if len(b) == 0 {
		return nil
	}
	if h != nil && utf8.Valid(b) {
		if ids := h.Tokenize(string(b)); v.spells(ids, b) {
			return ids
		}
	}
	if v.byteTok == nil {
		v.byteTok = new([256]int32)
		for i := range v.byteTok {
			v.byteTok[i] = -1
		}
		for id, t := range v.Tokens {
			if len(t) == 1 && !v.Special[id] && v.byteTok[t[0]] < 0 {
				v.byteTok[t[0]] = int32(id)
			}
		}
	}
	ids := make([]int32, len(b))
	for i, c := range b {
		if ids[i] = v.byteTok[c]; ids[i] < 0 {
			return nil
		}
	}
	return ids
}

// spells reports whether the non-special tokens ids concatenate to b.
func (v *Vocab) spells(ids []int32, b []byte) bool {
	for _, id := range ids {
		if !v.Valid(id) || v.Special[id] || len(v.Tokens[id]) == 0 || !bytes.HasPrefix(b, v.Tokens[id]) {
			return false
		}
		b = b[len(v.Tokens[id]):]
	}
	return len(b) == 0
}
