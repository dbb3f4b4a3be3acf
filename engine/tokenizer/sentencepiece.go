package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// metaspace is U+2581 LOWER ONE EIGHTH BLOCK, SentencePiece's stand-in for
// a space.
const metaspace = "▁"

// prependScheme is when a Metaspace pre-tokenizer puts "▁" before a piece.
type prependScheme int

const (
	prependNever  prependScheme = iota
	prependAlways               // before every piece not starting with "▁"
	prependFirst                // only before a piece at the start of the input
)

// spModel is what a SentencePiece-style BPE file (Llama 2, Mistral,
// TinyLlama; byte fallback) adds to the shared BPE tables. Encoding:
// each piece between added tokens is normalized (an optional Prepend("▁")
// of a non-empty piece, spaces replaced by "▁"), optionally cut by a
// Metaspace pre-tokenizer, and BPE runs over the characters of each
// word, a character missing from the vocabulary becoming the <0xNN>
// tokens of its UTF-8 bytes. Decoding: "▁" is a space, a run of <0xNN>
// tokens is its bytes (one U+FFFD per byte if they are not valid UTF-8),
// and up to strip leading spaces of the text are removed.
type spModel struct {
	prepend   bool // Prepend("▁") normalizer
	replace   bool // spaces become "▁" (Replace normalizer or Metaspace)
	metaspace bool // a Metaspace pre-tokenizer follows the normalizer
	scheme    prependScheme
	split     bool // Metaspace cuts before every "▁"
	// cutWords: no vocabulary token has "▁" after another character, so
	// no merge can join the two sides of such a point and a piece may be
	// cut there into words (same ids; short words hit the cache, where a
	// whole paragraph as one word would not). True for Llama 2 and
	// Mistral, whose tokens have "▁" only at the start.
	cutWords bool
	strip    int    // leading spaces the decoder's Strip removes
	fallback []bool // id → the token is <0xNN>
}

// parseSentencePiece checks the model, normalizer and pre-tokenizer of a
// file with the SentencePiece-style decoder.
func parseSentencePiece(m *modelJSON, normalizer, pre json.RawMessage) (*spModel, error) {
	if !m.ByteFallback {
		return nil, errors.New("unsupported BPE model without byte_fallback but with the SentencePiece-style decoder (unknown characters would need unk_token)")
	}
	sp := &spModel{}
	if err := sp.parseNormalizer(normalizer); err != nil {
		return nil, err
	}
	if err := sp.parsePreTokenizer(pre); err != nil {
		return nil, err
	}
	return sp, nil
}

// parseNormalizer accepts none, Prepend("▁"), Replace(" " → "▁") or a
// Sequence of them.
func (sp *spModel) parseNormalizer(raw json.RawMessage) error {
	if isNull(raw) {
		return nil
	}
	var c component
	if err := json.Unmarshal(raw, &c); err != nil {
		return fmt.Errorf("normalizer: %w", err)
	}
	list := []component{c}
	if c.Type == "Sequence" {
		list = c.Normalizers
	}
	for _, n := range list {
		switch {
		case n.Type == "Prepend" && n.Prepend == metaspace && !sp.prepend:
			sp.prepend = true
		case n.isReplace(" ", metaspace) && !sp.replace:
			sp.replace = true
		default:
			return fmt.Errorf("unsupported normalizer %s for SentencePiece-style BPE (supported: Prepend(\"▁\"), Replace(\" \" → \"▁\"), a Sequence of them)", describeNormalizer(n))
		}
	}
	return nil
}

func describeNormalizer(c component) string {
	switch c.Type {
	case "Prepend":
		return fmt.Sprintf("Prepend(%q)", c.Prepend)
	case "Replace":
		if c.Pattern.String != nil {
			return fmt.Sprintf("Replace(%q → %q)", *c.Pattern.String, c.Content)
		}
		return "Replace(Regex)"
	case "":
		return "an object without type"
	}
	return c.Type
}

// parsePreTokenizer accepts none or Metaspace("▁").
func (sp *spModel) parsePreTokenizer(raw json.RawMessage) error {
	if isNull(raw) {
		return nil
	}
	var c component
	if err := json.Unmarshal(raw, &c); err != nil {
		return fmt.Errorf("pre_tokenizer: %w", err)
	}
	if c.Type != "Metaspace" || c.Replacement != metaspace {
		return fmt.Errorf("unsupported pre_tokenizer %s for SentencePiece-style BPE (supported: none, Metaspace(\"▁\"))", c.describe())
	}
	sp.metaspace, sp.replace = true, true
	sp.split = c.Split == nil || *c.Split
	switch c.PrependScheme {
	case "always":
		sp.scheme = prependAlways
	case "first":
		sp.scheme = prependFirst
	case "never":
		sp.scheme = prependNever
	case "":
		// Files from before prepend_scheme: add_prefix_space, default true.
		sp.scheme = prependAlways
		if c.AddPrefixSpace != nil && !*c.AddPrefixSpace {
			sp.scheme = prependNever
		}
	default:
		return fmt.Errorf("unsupported pre_tokenizer Metaspace with prepend_scheme %q", c.PrependScheme)
	}
	return nil
}

// upperHex are the digits of a byte token as SentencePiece writes them.
const upperHex = "0123456789ABCDEF"

// byteToken parses a byte-fallback token "<0xNN>", as the ByteFallback
// decoder does.
func byteToken(s string) (byte, bool) {
	if len(s) != 6 || !strings.HasPrefix(s, "<0x") || s[5] != '>' {
		return 0, false
	}
	hi, ok1 := hexDigit(s[3])
	lo, ok2 := hexDigit(s[4])
	return hi<<4 | lo, ok1 && ok2
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// tokenBytes is what a token stands for: its byte for <0xNN>, else its
// text with "▁" as a space.
func (sp *spModel) tokenBytes(s string) []byte {
	if b, ok := byteToken(s); ok {
		return []byte{b}
	}
	return []byte(strings.ReplaceAll(s, metaspace, " "))
}

// encodeSentencePiece is encode for SentencePiece-style files.
func (t *Tokenizer) encodeSentencePiece(text string, special bool) []int32 {
	ids := make([]int32, 0, len(text)/3+1)
	for at := 0; at < len(text); {
		start, end, id := t.added.find(text[at:], special)
		if start < 0 {
			ids = t.spSegment(ids, text[at:], at == 0)
			break
		}
		ids = t.spSegment(ids, text[at:at+start], at == 0)
		ids = append(ids, id)
		at += end
	}
	return ids
}

// spSegment normalizes and encodes the text between two added tokens;
// first says that it starts the input.
func (t *Tokenizer) spSegment(dst []int32, seg string, first bool) []int32 {
	sp := t.sp
	if seg == "" {
		return dst
	}
	var b strings.Builder
	b.Grow(len(seg) + 2*len(metaspace))
	if sp.prepend {
		b.WriteString(metaspace)
	}
	if sp.replace {
		for i := 0; i < len(seg); i++ {
			if seg[i] == ' ' {
				b.WriteString(metaspace)
			} else {
				b.WriteByte(seg[i])
			}
		}
	} else {
		b.WriteString(seg)
	}
	s := b.String()
	if sp.metaspace && !strings.HasPrefix(s, metaspace) && (sp.scheme == prependAlways || (sp.scheme == prependFirst && first)) {
		s = metaspace + s
	}
	switch {
	case sp.split:
		// Metaspace's split: every "▁" starts a new word.
		for len(s) > 0 {
			n := strings.Index(s[1:], metaspace) + 1
			if n == 0 {
				n = len(s)
			}
			dst = t.spWord(dst, s[:n])
			s = s[n:]
		}
	case sp.cutWords:
		for len(s) > 0 {
			n := wordEnd(s)
			dst = t.spWord(dst, s[:n])
			s = s[n:]
		}
	default:
		dst = t.spWord(dst, s)
	}
	return dst
}

// wordEnd returns the length of the first word of s for cutWords: a run
// of "▁" and what follows up to the next "▁".
func wordEnd(s string) int {
	i := len(s) - len(strings.TrimLeft(s, metaspace))
	if j := strings.Index(s[i:], metaspace); j >= 0 {
		return i + j
	}
	return len(s)
}

// innerMetaspace reports whether "▁" follows another character in s.
func innerMetaspace(s string) bool {
	return strings.Contains(strings.TrimLeft(s, metaspace), metaspace)
}

// maxCachedWord is the longest word the cache keeps: without a
// pre-tokenizer a whole paragraph is one word, not worth remembering.
const maxCachedWord = 256

// spWord appends the ids of one normalized word: its characters as
// symbols (byte fallback for those not in the vocabulary), then the
// merges.
func (t *Tokenizer) spWord(dst []int32, word string) []int32 {
	if t.ignoreMerges {
		if id, ok := t.vocab.get(word); ok {
			return append(dst, id)
		}
	}
	cache := len(word) <= maxCachedWord
	if cache {
		if ids, ok := t.cache.get(word); ok {
			return append(dst, ids...)
		}
	}
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)
	syms := s.syms[:0]
	for i := 0; i < len(word); {
		_, n := utf8.DecodeRuneInString(word[i:])
		if id, ok := t.vocab.get(word[i : i+n]); ok {
			syms = append(syms, symbol{id: id, prev: int32(len(syms) - 1), next: int32(len(syms) + 1)})
		} else {
			for j := i; j < i+n; j++ {
				syms = append(syms, symbol{id: t.byteIDs[word[j]], prev: int32(len(syms) - 1), next: int32(len(syms) + 1)})
			}
		}
		i += n
	}
	start := len(dst)
	dst = t.mergeSymbols(dst, s, syms)
	if cache {
		t.cache.put(word, dst[start:])
	}
	return dst
}

// decodeSentencePiece is Decode for SentencePiece-style files.
func (t *Tokenizer) decodeSentencePiece(ids []int32) string {
	var out, run []byte
	for _, id := range ids {
		b := t.TokenBytes(id)
		if b == nil {
			continue
		}
		if t.sp.fallback[id] {
			run = append(run, b[0])
			continue
		}
		out = append(appendRun(out, run), b...)
		run = run[:0]
	}
	out = appendRun(out, run)
	return string(stripSpaces(out, t.sp.strip))
}

// appendRun appends the bytes of a run of byte-fallback tokens: as they
// are when they are valid UTF-8, else one U+FFFD per byte, as Hugging
// Face's ByteFallback decoder does.
func appendRun(dst, run []byte) []byte {
	if utf8.Valid(run) {
		return append(dst, run...)
	}
	for range run {
		dst = append(dst, "\uFFFD"...)
	}
	return dst
}

// stripSpaces removes up to n leading spaces.
func stripSpaces(b []byte, n int) []byte {
	for ; n > 0 && len(b) > 0 && b[0] == ' '; n-- {
		b = b[1:]
	}
	return b
}
