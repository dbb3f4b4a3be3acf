package sdk

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"unicode/utf8"

	"github.com/driftwoodlabs/driftwood/controllers/abi"
)

// Vocab is the model's vocabulary as the host hands it over: the raw
// bytes of every token id (special tokens: their text) and which ids are
// special. It reads the ABI's vocabulary layout in place, without a
// pointer per token (a Go guest's garbage collector never scans it).
type Vocab struct {
	data    []byte   // the ABI's layout
	entry   []uint32 // entry[id]: offset of id's entry in data; entry[n] = len(data)
	longest int      // bytes of the longest token

	byteTok *[256]int32                   // single-byte tokens, built on first use by Spell
	trie    *Trie                         // the host's, or built on first use by Trie
	fetch   func() *Trie                  // asks the host for the trie (nil: none)
	classes map[reflect.Type][]tokenClass // by classifier type, see PrepareClasses
}

// NewVocab returns the vocabulary of tokens (the bytes of each id, empty
// for ids without a token); special may be shorter than tokens (missing
// entries are not special).
func NewVocab(tokens [][]byte, special []bool) *Vocab {
	v, err := ParseVocab(abi.AppendVocab(nil, tokens, special), len(tokens))
	if err != nil {
		panic(err) // AppendVocab's output always parses
	}
	return v
}

// ParseVocab reads n entries in the ABI's vocabulary format. It reads
// blob in place: blob must stay unchanged while the Vocab is used (the
// ABI's hosts keep the vocabulary buffer for the instance's life).
func ParseVocab(blob []byte, n int) (*Vocab, error) {
	if n < 0 {
		return nil, fmt.Errorf("vocabulary: negative size %d", n)
	}
	v := &Vocab{data: blob, entry: make([]uint32, n+1)}
	off := 0
	for id := range n {
		if len(blob)-off < abi.VocabEntryHead {
			return nil, fmt.Errorf("vocabulary: entry %d of %d is cut short", id, n)
		}
		v.entry[id] = uint32(off)
		_, size := abi.VocabEntry(blob[off:])
		off += abi.VocabEntryHead
		if len(blob)-off < size {
			return nil, fmt.Errorf("vocabulary: token %d needs %d bytes, %d left", id, size, len(blob)-off)
		}
		off += size
		v.longest = max(v.longest, size)
	}
	if off != len(blob) {
		return nil, errors.New("vocabulary: bytes left after the last entry")
	}
	v.entry[n] = uint32(off)
	return v, nil
}

// Token returns the bytes of id (its text for a special token; empty for
// an id without a token or outside the vocabulary). The caller must not
// change them.
func (v *Vocab) Token(id int32) []byte {
	if !v.Valid(id) {
		return nil
	}
	return v.data[v.entry[id]+abi.VocabEntryHead : v.entry[id+1] : v.entry[id+1]]
}

// Trie returns the trie of the ordinary tokens, made on first use: the
// one the host builds once for every instance (a Wasm guest's vocabulary
// from dw_load fetches it with the trie import), or one built here. A
// controller that needs it calls it from Load, so that the copy is made
// before a switch to the controller.
func (v *Vocab) Trie() *Trie {
	if v.trie == nil && v.fetch != nil {
		v.trie = v.fetch()
	}
	if v.trie == nil {
		v.trie = NewTrie(v)
	}
	return v.trie
}

// Longest returns the length in bytes of the longest token.
func (v *Vocab) Longest() int { return v.longest }

// Len returns the number of token ids.
func (v *Vocab) Len() int { return len(v.entry) - 1 }

// IsSpecial reports whether id is a special token.
func (v *Vocab) IsSpecial(id int32) bool {
	return v.Valid(id) && v.data[v.entry[id]]&abi.VocabSpecial != 0
}

// ordinary reports whether id is a token of the trie: not special, not
// empty.
func (v *Vocab) ordinary(id int32) bool {
	return v.Valid(id) && v.data[v.entry[id]]&abi.VocabSpecial == 0 && v.entry[id+1]-v.entry[id] > abi.VocabEntryHead
}

// Valid reports whether id is inside the vocabulary.
func (v *Vocab) Valid(id int32) bool { return id >= 0 && int(id) < v.Len() }

// endOfTurnTexts are the end-of-turn markers of common chat templates,
// most preferred first.
var endOfTurnTexts = []string{"<|eot_id|>", "<|im_end|>", "<|end_of_text|>", "<|endoftext|>", "</s>"}

// EndOfTurn returns the special token that ends an assistant turn
// (<|eot_id|> for Llama 3; <|im_end|>, <|end_of_text|>, <|endoftext|> or
// </s> for vocabularies without it), or false when there is none.
func (v *Vocab) EndOfTurn() (int32, bool) {
	for _, text := range endOfTurnTexts {
		for id := range int32(v.Len()) {
			if v.IsSpecial(id) && string(v.Token(id)) == text {
				return id, true
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
		for id := range int32(v.Len()) {
			if t := v.Token(id); len(t) == 1 && !v.IsSpecial(id) && v.byteTok[t[0]] < 0 {
				v.byteTok[t[0]] = id
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
		if !v.ordinary(id) || !bytes.HasPrefix(b, v.Token(id)) {
			return false
		}
		b = b[len(v.Token(id)):]
	}
	return len(b) == 0
}
