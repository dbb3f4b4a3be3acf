package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"sync"
	"unsafe"
)

type fileJSON struct {
	AddedTokens   []addedJSON     `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	Model         *modelJSON      `json:"model"`
	Decoder       json.RawMessage `json:"decoder"`
	PostProcessor json.RawMessage `json:"post_processor"`
}

type addedJSON struct {
	ID         int32  `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	Lstrip     bool   `json:"lstrip"`
	Rstrip     bool   `json:"rstrip"`
	Special    bool   `json:"special"`
	Normalized bool   `json:"normalized"`
}

type modelJSON struct {
	Type                    string     `json:"type"`
	Vocab                   vocabJSON  `json:"vocab"`
	Merges                  mergesJSON `json:"merges"`
	IgnoreMerges            bool       `json:"ignore_merges"`
	ByteFallback            bool       `json:"byte_fallback"`
	ContinuingSubwordPrefix string     `json:"continuing_subword_prefix"`
	EndOfWordSuffix         string     `json:"end_of_word_suffix"`
	Dropout                 *float64   `json:"dropout"`
	// ranks, when not nil, gives each merge its rank in place of its
	// position: merges of equal rank go leftmost first. Only GGUF
	// SentencePiece vocabularies set it (see spMerges).
	ranks []int32
	// resolved holds each merge as the ids of its two tokens and of
	// their product: setMerges fills it from Merges, a cache entry
	// gives it in their place (cache.go), so that a cached load makes
	// no vocabulary lookups for the merges.
	resolved [][3]int32
	// entries, from a cache entry, is the vocabulary in place of Vocab:
	// a list, where a map would be built only to be read once.
	entries []vocabEntry
}

type vocabEntry struct {
	s  string
	id int32
}

// vocabulary is the model's vocabulary, token and id, from Vocab or
// entries.
func (m *modelJSON) vocabulary() iter.Seq2[string, int32] {
	if m.entries == nil {
		return maps.All(m.Vocab)
	}
	return func(yield func(string, int32) bool) {
		for _, e := range m.entries {
			if !yield(e.s, e.id) {
				return
			}
		}
	}
}

func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

func parse(data []byte) (*Tokenizer, error) {
	f, err := decodeFile(data)
	if err != nil {
		return nil, err
	}
	return build(f)
}

// decodeFile decodes a tokenizer.json and checks that it is a BPE model.
func decodeFile(data []byte) (*fileJSON, error) {
	var f fileJSON
	// One pass over the file: a type mismatch (say, a Unigram model's list
	// vocabulary) still fills the other fields, so the model type can be
	// reported in preference to it.
	err := json.Unmarshal(data, &f)
	var syntaxErr *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntaxErr):
		return nil, fmt.Errorf("invalid JSON: %w", err)
	case err != nil && !errors.As(err, &typeErr):
		return nil, err
	case f.Model == nil:
		return nil, errors.New("no model")
	case f.Model.Type != "BPE":
		return nil, fmt.Errorf("unsupported model type %q (only BPE is supported)", f.Model.Type)
	case err != nil:
		return nil, err
	}
	return &f, nil
}

// build makes the tokenizer a decoded file describes.
func build(f *fileJSON) (*Tokenizer, error) {
	m := f.Model
	switch {
	case m.ContinuingSubwordPrefix != "" || m.EndOfWordSuffix != "":
		return nil, errors.New("unsupported BPE model with continuing_subword_prefix or end_of_word_suffix")
	case m.Dropout != nil && *m.Dropout != 0:
		return nil, errors.New("unsupported BPE model with dropout")
	}
	sentencePiece, strip, err := parseDecoder(f.Decoder)
	if err != nil {
		return nil, err
	}
	t := &Tokenizer{ignoreMerges: m.IgnoreMerges}
	if sentencePiece {
		if t.sp, err = parseSentencePiece(m, f.Normalizer, f.PreTokenizer); err != nil {
			return nil, err
		}
		t.sp.strip = strip
	} else {
		if m.ByteFallback {
			return nil, errors.New("unsupported BPE model with byte_fallback and the ByteLevel decoder (byte fallback needs the SentencePiece-style decoder Sequence[Replace, ByteFallback, Fuse, Strip])")
		}
		nfc, err := parseByteLevelNormalizer(f.Normalizer)
		if err != nil {
			return nil, err
		}
		if t.pre, err = parsePreTokenizer(f.PreTokenizer); err != nil {
			return nil, err
		}
		t.pre.nfc = nfc
	}
	// The two tables are a third of a load each and touch disjoint fields
	// (both only read m.Vocab): build the merges on another core.
	var mergesErr error
	merged := make(chan struct{})
	go func() {
		defer close(merged)
		mergesErr = t.setMerges(m)
	}()
	err = t.setVocab(m.vocabulary(), f.AddedTokens, !isNull(f.Normalizer))
	<-merged
	if err != nil {
		return nil, err
	}
	if mergesErr != nil {
		return nil, mergesErr
	}
	for i, r := range m.resolved { // from a cache entry, trusted no further
		if max(r[0], r[1], r[2]) >= int32(len(t.tokens)) {
			return nil, fmt.Errorf("merge %d names token %d, outside the vocabulary of %d", i, max(r[0], r[1], r[2]), len(t.tokens))
		}
	}
	if err := t.setPostProcessor(f.PostProcessor); err != nil {
		return nil, err
	}
	return t, nil
}

// setVocab fills the id → bytes table, the vocabulary, the byte tokens and
// the added tokens. The vocabulary is keyed by what BPE works on: raw bytes
// for byte-level BPE, the model's strings ("▁Hello") for SentencePiece.
// The byte tokens are GPT-2's byte characters for byte-level BPE, <0x00>
// … <0xFF> for SentencePiece byte fallback. SentencePiece needs them all;
// a byte-level vocabulary may lack some (SmolLM's lacks six control
// characters and bytes that UTF-8 never or hardly uses), -1 then: such a
// byte gives no token (see mergeWord).
func (t *Tokenizer) setVocab(vocab iter.Seq2[string, int32], added []addedJSON, normalizer bool) error {
	size, chars, n := int32(0), 0, 0
	for s, id := range vocab {
		if id < 0 || id >= maxID {
			return fmt.Errorf("vocabulary token %q has id %d, outside [0, %d)", s, id, maxID)
		}
		size, chars, n = max(size, id+1), chars+len(s), n+1
	}
	for _, a := range added {
		if a.ID < 0 || a.ID >= maxID {
			return fmt.Errorf("added token %q has id %d, outside [0, %d)", a.Content, a.ID, maxID)
		}
		size = max(size, a.ID+1)
	}
	t.tokens = make([][]byte, size)
	t.special = make([]bool, size)
	t.vocab = newStrTable(n)
	tokenBytes := byteLevelDecode
	if t.sp != nil {
		tokenBytes = t.sp.tokenBytes
		t.sp.fallback = make([]bool, size)
		t.sp.cutWords = true
		t.byBytes = newStrTable(n)
	}
	// Byte-level tokens' bytes go into one allocation (each at most its
	// string's length), and the table's keys are those bytes as strings
	// without a copy: t.tokens is never written through. 256,000 small
	// allocations were a quarter of a load.
	var arena []byte
	if t.sp == nil {
		arena = make([]byte, 0, chars)
	}
	for b := range t.byteIDs {
		t.byteIDs[b] = -1
	}
	for s, id := range vocab {
		var b []byte
		if t.sp == nil {
			start := len(arena)
			arena = appendByteLevel(arena, s)
			b = arena[start:len(arena):len(arena)]
		} else {
			b = tokenBytes(s)
		}
		t.tokens[id] = b
		key := unsafe.String(unsafe.SliceData(b), len(b))
		if t.sp != nil {
			var c byte
			c, t.sp.fallback[id] = byteToken(s)
			if t.sp.fallback[id] && s[3] == upperHex[c>>4] && s[4] == upperHex[c&15] {
				t.byteIDs[c] = id // <0x0A>, as SentencePiece writes them
			}
			t.sp.cutWords = t.sp.cutWords && !innerMetaspace(s)
			t.byBytes.add(key, id)
			key = s
		} else if len(b) == 1 && s == string(byteToRune[b[0]]) {
			t.byteIDs[b[0]] = id
		}
		t.vocab.add(key, id)
	}
	if t.byBytes == nil {
		t.byBytes = t.vocab
	}
	if t.sp != nil {
		if b := slices.Index(t.byteIDs[:], -1); b >= 0 {
			return fmt.Errorf("vocabulary lacks the byte-fallback token \"<0x%02X>\" for byte 0x%02x", b, b)
		}
	}
	tokens := make([]addedToken, 0, len(added))
	for _, a := range added {
		switch {
		case a.Content == "":
			return fmt.Errorf("added token %d has empty content", a.ID)
		case a.SingleWord:
			return fmt.Errorf("added token %q uses single_word, which is not supported", a.Content)
		case a.Normalized && normalizer:
			return fmt.Errorf("added token %q is normalized, which is not supported with a normalizer", a.Content)
		}
		t.tokens[a.ID] = tokenBytes(a.Content)
		if t.sp != nil {
			_, t.sp.fallback[a.ID] = byteToken(a.Content)
		}
		t.special[a.ID] = a.Special
		tokens = append(tokens, addedToken{content: a.Content, id: a.ID, special: a.Special, lstrip: a.Lstrip, rstrip: a.Rstrip})
	}
	t.added = newAddedMatcher(tokens)
	return nil
}

// mergesJSON is the merge list, given either as "left right" strings or
// as ["left", "right"] pairs.
type mergesJSON [][2]string

func mergeError(i int, s string) error {
	return fmt.Errorf("merge %d %q is not two tokens separated by a space", i, s)
}

// unknownMergeError is a merge that uses or makes a token not in the
// vocabulary: index i of the list.
type unknownMergeError struct {
	i    int
	pair [2]string
}

func (e *unknownMergeError) Error() string {
	return fmt.Sprintf("merge %d (%q %q) uses or makes a token not in the vocabulary", e.i, e.pair[0], e.pair[1])
}

// setMerges fills the pair → (rank, id) table from m's merges, resolved
// to ids first unless m.resolved holds them already; a merge's rank is
// its position, or m.ranks[i] when that is not nil.
func (t *Tokenizer) setMerges(m *modelJSON) error {
	if m.resolved == nil {
		resolved, err := resolveMerges(m.Merges, m.Vocab)
		if err != nil {
			return err
		}
		m.resolved = resolved
	}
	t.merges = newPairTable(len(m.resolved))
	for i, r := range m.resolved { // of two merges of one pair the first stays
		rank := int32(i)
		if m.ranks != nil {
			rank = m.ranks[i]
		}
		t.merges.add(pairKey(r[0], r[1]), merge{rank: rank, id: r[2]})
	}
	return nil
}

// resolveMerges returns each merge of pairs as the vocabulary ids of its
// two tokens and their product.
func resolveMerges(pairs mergesJSON, vocab map[string]int32) ([][3]int32, error) {
	// Three vocabulary lookups a merge are most of the work (840,000 for
	// Llama 3, each a likely cache miss) and only read vocab: two
	// goroutines resolve a half each.
	resolved := make([][3]int32, len(pairs))
	bad := [2]int{-1, -1}
	half := len(pairs) / 2
	var wg sync.WaitGroup
	for part, span := range [2][2]int{{0, half}, {half, len(pairs)}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var joined []byte
			for i := span[0]; i < span[1]; i++ {
				p := pairs[i]
				l, okl := vocab[p[0]]
				r, okr := vocab[p[1]]
				joined = append(append(joined[:0], p[0]...), p[1]...)
				id, ok := vocab[string(joined)] // no allocation: a map index
				if !okl || !okr || !ok {
					bad[part] = i
					return
				}
				resolved[i] = [3]int32{l, r, id}
			}
		}()
	}
	wg.Wait()
	for _, i := range bad {
		if i >= 0 {
			return nil, &unknownMergeError{i, pairs[i]}
		}
	}
	return resolved, nil
}
