package tokenizer

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// GGUFVocab is a tokenizer as a GGUF file's metadata gives it: the
// tokenizer.ggml.* keys, read by the caller (engine/gguf) and handed to
// FromGGUF.
type GGUFVocab struct {
	Model  string    // tokenizer.ggml.model: "gpt2" (byte-level BPE) or "llama" (SentencePiece)
	Pre    string    // tokenizer.ggml.pre: the pre-tokenizer's name in llama.cpp
	Tokens []string  // tokenizer.ggml.tokens, in id order
	Types  []int32   // tokenizer.ggml.token_type, one a token (TokenNormal, TokenControl, ...)
	Scores []float32 // tokenizer.ggml.scores, one a token (SentencePiece)
	Merges []string  // tokenizer.ggml.merges, "left right" (byte-level BPE)
	// The special tokens' ids, -1 when the key is absent:
	// tokenizer.ggml.bos_token_id, eos_token_id, eot_token_id,
	// unknown_token_id and padding_token_id.
	BOS, EOS, EOT, Unknown, Padding int32
	// tokenizer.ggml.add_bos_token, add_eos_token and add_space_prefix,
	// nil when absent (llama.cpp's defaults then apply).
	AddBOS, AddEOS, AddSpacePrefix *bool
}

// The values of tokenizer.ggml.token_type.
const (
	TokenUndefined   = 0
	TokenNormal      = 1
	TokenUnknown     = 2
	TokenControl     = 3
	TokenUserDefined = 4
	TokenUnused      = 5
	TokenByte        = 6
)

// ggufPre is what a tokenizer.ggml.pre name stands for: the split of one
// of this package's byte-level pre-tokenizers, and what llama.cpp does
// besides for that name.
type ggufPre struct {
	split        string // llama3Pattern, qwenPattern or gpt2Pattern
	digits       bool   // every number character is cut out first (Digits)
	nfc          bool   // NFC first, as the model's tokenizer.json does
	ignoreMerges bool   // a piece that is a token is taken whole
	addBOS       bool   // llama.cpp's add_bos when add_bos_token is absent
}

var (
	preLlama3  = ggufPre{split: llama3Pattern, ignoreMerges: true, addBOS: true}
	preDBRX    = ggufPre{split: llama3Pattern}
	preQwen2   = ggufPre{split: qwenPattern, nfc: true}
	preGPT2    = ggufPre{split: gpt2Pattern}
	preDigits  = ggufPre{split: gpt2Pattern, digits: true}
	ggufPreMap = map[string]ggufPre{
		// llama.cpp's LLAMA3 pre-tokenizer type.
		"llama-bpe": preLlama3, "llama3": preLlama3, "llama-v3": preLlama3,
		"falcon3": preLlama3, "falcon-h1": preLlama3, "pixtral": preLlama3,
		"midm-2.0": preLlama3, "lfm2": preLlama3,
		// DBRX and SMAUG: the Llama 3 split, every merge applied.
		"dbrx": preDBRX, "smaug-bpe": preDBRX,
		// QWEN2, for Qwen2, 2.5 and 3 and the DeepSeek-R1 distillations
		// of Qwen2.5.
		"qwen2": preQwen2, "deepseek-r1-qwen": preQwen2,
		// GPT2.
		"gpt-2": preGPT2, "phi-2": preGPT2,
		// STARCODER, SMOLLM, REFACT, CODESHELL: one piece a digit, then
		// GPT-2's split.
		"smollm": preDigits, "starcoder": preDigits, "refact": preDigits, "codeshell": preDigits,
	}
)

// ggufPreNames lists the supported tokenizer.ggml.pre names for errors.
func ggufPreNames() string {
	names := make([]string, 0, len(ggufPreMap))
	for name := range ggufPreMap {
		names = append(names, name)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// FromGGUF builds the tokenizer that GGUF metadata describes; source
// (usually the file's path) names it in errors. The vocabulary is turned
// into the tokenizer.json a Hugging Face conversion of the same model
// holds, and built by the code that builds Load's tokenizers, so the two
// readers share one engine:
//
//   - "gpt2": byte-level BPE with the merges, split as tokenizer.ggml.pre
//     names (see ggufPreMap; other names are refused);
//   - "llama": SentencePiece BPE with byte fallback, merging by score as
//     llama.cpp does (see spMerges), with the dummy space prefix unless
//     add_space_prefix is false; tokenizer.ggml.pre is not read, as in
//     llama.cpp.
//
// Control (3) and unknown (2) tokens become special added tokens and
// user-defined (4) ones added tokens that are not special, as llama.cpp
// treats them: Encode recognises only the latter, EncodeWithSpecial all.
// AddSpecialTokens adds the BOS and EOS that add_bos_token and
// add_eos_token ask for (absent, llama.cpp's defaults: the BOS for
// SentencePiece and the Llama 3 family, nothing else). The Fingerprint is
// a hash of the vocabulary itself, not of a file.
//
// The ids are llama.cpp's (llama_tokenize of the same file), but where
// llama.cpp departs from the model's own tokenizer:
//
//   - Qwen's tokenizer.json normalises to NFC and llama.cpp does not;
//     FromGGUF does, as the model was trained;
//   - llama.cpp makes a normal token whose text is on its list of
//     end-of-generation texts ("</s>" is, and Qwen has such a token) a
//     control token; FromGGUF goes by the token types;
//   - llama.cpp finds added tokens longest token first over the whole
//     text, FromGGUF leftmost-longest, as Hugging Face (the same unless
//     added tokens overlap), and it gives a few models' added tokens
//     lstrip or rstrip by model name, which FromGGUF does not.
//
// Like llama.cpp, a byte that a byte-level vocabulary lacks gives no
// token and keeps its neighbours apart (Hugging Face drops it before
// merging), and SentencePiece merges make only normal tokens.
func FromGGUF(v GGUFVocab, source string) (*Tokenizer, error) {
	t, _, err := FromGGUFCached(v, source, "")
	return t, err
}

// FromGGUFCached is FromGGUF with LoadCached's cache in dir ("" for
// none), keyed by the vocabulary's fingerprint, for byte-level BPE
// vocabularies: turning Llama 3's 128,256 tokens and 280,147 merges into
// tokenizer.json's decoded form and resolving the merges is a third of
// building its tokenizer from the metadata. A SentencePiece vocabulary
// ranks its merges by the tokens' scores, which an entry does not hold,
// and builds without (Mistral's 32,768 tokens: 30 ms). note is as
// LoadCached's.
func FromGGUFCached(v GGUFVocab, source, dir string) (t *Tokenizer, note string, err error) {
	sum := v.fingerprint()
	decode := func() (*fileJSON, error) { return v.file() }
	if dir == "" || v.Model != "gpt2" {
		var f *fileJSON
		if f, err = decode(); err == nil {
			t, err = build(f)
		}
	} else {
		t, note, err = buildCached(dir, sum, decode)
	}
	if merr := (*unknownMergeError)(nil); errors.As(err, &merr) && v.Model == "gpt2" {
		err = fmt.Errorf("tokenizer.ggml.merges: merge %d %q uses or makes a token not in the vocabulary", merr.i, v.Merges[merr.i])
	}
	if err != nil {
		return nil, note, fmt.Errorf("tokenizer %s: %w", source, err)
	}
	t.byteGaps = true // as llama.cpp, see mergeWord
	t.fingerprint = hex.EncodeToString(sum[:])
	return t, note, nil
}

// file checks the vocabulary and turns it into the decoded tokenizer.json
// that Load would build the same tokenizer from.
func (v *GGUFVocab) file() (*fileJSON, error) {
	n := len(v.Tokens)
	switch {
	case n == 0:
		return nil, fmt.Errorf("tokenizer.ggml.tokens is missing or empty")
	case n > maxID:
		return nil, fmt.Errorf("tokenizer.ggml.tokens has %d tokens, more than the %d Driftwood reads", n, maxID)
	case v.Types == nil:
		return nil, fmt.Errorf("tokenizer.ggml.token_type is missing")
	case len(v.Types) != n:
		return nil, fmt.Errorf("tokenizer.ggml.token_type has %d entries for %d tokens", len(v.Types), n)
	}
	f := &fileJSON{Model: &modelJSON{Type: "BPE", Vocab: make(map[string]int32, n)}}
	for id, s := range v.Tokens {
		typ := v.Types[id]
		if typ < TokenUndefined || typ > TokenByte {
			return nil, fmt.Errorf("tokenizer.ggml.token_type: token %d %q has type %d, not one of 0-6", id, s, typ)
		}
		if s == "" {
			// llama.cpp's name for an empty token, which no text matches.
			s = "[EMPTY_" + strconv.Itoa(id) + "]"
		}
		switch typ {
		case TokenControl, TokenUnknown, TokenUserDefined:
			f.AddedTokens = append(f.AddedTokens, addedJSON{ID: int32(id), Content: s, Special: typ != TokenUserDefined})
		default:
			if old, dup := f.Model.Vocab[s]; dup {
				return nil, fmt.Errorf("tokenizer.ggml.tokens: token %d %q repeats token %d", id, s, old)
			}
			f.Model.Vocab[s] = int32(id)
		}
	}
	if err := checkAddedRepeats(f.AddedTokens, f.Model.Vocab); err != nil {
		return nil, err
	}
	if err := v.checkSpecialIDs(); err != nil {
		return nil, err
	}
	var err error
	switch v.Model {
	case "gpt2":
		err = v.byteLevel(f)
	case "llama":
		err = v.sentencePiece(f)
	case "":
		return nil, fmt.Errorf("tokenizer.ggml.model is missing")
	default:
		return nil, fmt.Errorf("tokenizer.ggml.model %q is not supported (supported: gpt2, byte-level BPE; llama, SentencePiece)", v.Model)
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}

// checkAddedRepeats refuses an added token whose text another token has.
func checkAddedRepeats(added []addedJSON, vocab map[string]int32) error {
	seen := make(map[string]int32, len(added))
	for _, a := range added {
		old, dup := seen[a.Content]
		if !dup {
			old, dup = vocab[a.Content]
		}
		if dup {
			return fmt.Errorf("tokenizer.ggml.tokens: token %d %q repeats token %d", a.ID, a.Content, old)
		}
		seen[a.Content] = a.ID
	}
	return nil
}

// checkSpecialIDs checks that the special ids given are tokens.
func (v *GGUFVocab) checkSpecialIDs() error {
	for _, s := range []struct {
		key string
		id  int32
	}{
		{"bos_token_id", v.BOS}, {"eos_token_id", v.EOS}, {"eot_token_id", v.EOT},
		{"unknown_token_id", v.Unknown}, {"padding_token_id", v.Padding},
	} {
		if s.id < -1 || int(s.id) >= len(v.Tokens) {
			return fmt.Errorf("tokenizer.ggml.%s %d is not one of the %d tokens", s.key, s.id, len(v.Tokens))
		}
	}
	return nil
}

// byteLevel fills in a byte-level BPE file: the merges, the pre-tokenizer
// and normalizer the pre name stands for, the ByteLevel decoder.
func (v *GGUFVocab) byteLevel(f *fileJSON) error {
	pre, ok := ggufPreMap[v.Pre]
	switch {
	case v.Pre == "":
		return fmt.Errorf("tokenizer.ggml.pre is missing (supported: %s)", ggufPreNames())
	case !ok:
		return fmt.Errorf("tokenizer.ggml.pre %q is not supported (supported: %s)", v.Pre, ggufPreNames())
	case v.Merges == nil:
		return fmt.Errorf("tokenizer.ggml.merges is missing")
	}
	f.Model.Merges = make(mergesJSON, len(v.Merges))
	for i, s := range v.Merges {
		// As llama.cpp: the first space after the first byte.
		k := strings.IndexByte(s[min(1, len(s)):], ' ') + 1
		if k <= 0 {
			return fmt.Errorf("tokenizer.ggml.merges: %w", mergeError(i, s))
		}
		f.Model.Merges[i] = [2]string{s[:k], s[k+1:]}
	}
	f.Model.IgnoreMerges = pre.ignoreMerges
	f.PreTokenizer = preTokenizerJSON(pre)
	if pre.nfc {
		f.Normalizer = json.RawMessage(`{"type":"NFC"}`)
	}
	f.Decoder = json.RawMessage(`{"type":"ByteLevel","add_prefix_space":true,"trim_offsets":true,"use_regex":true}`)
	return v.postProcessor(f, -1, pre.addBOS)
}

// preTokenizerJSON is the tokenizer.json pre_tokenizer of a pre name.
func preTokenizerJSON(p ggufPre) json.RawMessage {
	if p.digits {
		return json.RawMessage(`{"type":"Sequence","pretokenizers":[{"type":"Digits","individual_digits":true},{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":true}]}`)
	}
	if p.split == gpt2Pattern {
		return json.RawMessage(`{"type":"ByteLevel","add_prefix_space":false,"use_regex":true}`)
	}
	pattern, _ := json.Marshal(p.split) // a string always marshals
	return json.RawMessage(`{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":` + string(pattern) +
		`},"behavior":"Isolated","invert":false},{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":false}]}`)
}

// sentencePiece fills in a SentencePiece file: the merges the scores
// imply, byte fallback, the "▁" normalizer (with the dummy prefix unless
// add_space_prefix is false) and the decoder that undoes it.
func (v *GGUFVocab) sentencePiece(f *fileJSON) error {
	if v.Scores == nil {
		return fmt.Errorf("tokenizer.ggml.scores is missing")
	}
	if len(v.Scores) != len(v.Tokens) {
		return fmt.Errorf("tokenizer.ggml.scores has %d entries for %d tokens", len(v.Scores), len(v.Tokens))
	}
	merges, ranks, err := spMerges(v.Tokens, v.Types, v.Scores, f.Model.Vocab)
	if err != nil {
		return err
	}
	f.Model.Merges, f.Model.ranks, f.Model.ByteFallback = merges, ranks, true
	prefix := v.AddSpacePrefix == nil || *v.AddSpacePrefix
	f.Normalizer = json.RawMessage(`{"type":"Replace","pattern":{"String":" "},"content":"▁"}`)
	f.Decoder = json.RawMessage(`{"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"▁"},"content":" "},{"type":"ByteFallback"},{"type":"Fuse"}]}`)
	if prefix {
		f.Normalizer = json.RawMessage(`{"type":"Sequence","normalizers":[{"type":"Prepend","prepend":"▁"},{"type":"Replace","pattern":{"String":" "},"content":"▁"}]}`)
		f.Decoder = json.RawMessage(`{"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"▁"},"content":" "},{"type":"ByteFallback"},{"type":"Fuse"},{"type":"Strip","content":" ","start":1,"stop":0}]}`)
	}
	// llama.cpp's SentencePiece BOS when the file names none.
	return v.postProcessor(f, 1, true)
}

// spMerges derives the merges of a SentencePiece vocabulary, which has
// scores instead: llama.cpp (like SentencePiece) repeatedly joins the two
// adjacent pieces whose concatenation is the token of highest score, the
// leftmost of equal scores. Every split of a token into two tokens is a
// merge, ranked by the token's score (equal scores, equal ranks, so that
// the leftmost goes first). Only normal, unused and undefined tokens take
// part: control, unknown and user-defined tokens are added tokens, and a
// byte token stands for a byte, not for its text.
func spMerges(tokens []string, types []int32, scores []float32, vocab map[string]int32) (mergesJSON, []int32, error) {
	var merges mergesJSON
	var products []int32
	for id, s := range tokens {
		if !mergeable(types[id]) {
			continue
		}
		if math.IsNaN(float64(scores[id])) {
			return nil, nil, fmt.Errorf("tokenizer.ggml.scores: token %d %q has score NaN", id, s)
		}
		for k := range s {
			if k == 0 {
				continue
			}
			l, okl := vocab[s[:k]]
			r, okr := vocab[s[k:]]
			if okl && okr && mergeable(types[l]) && mergeable(types[r]) {
				merges = append(merges, [2]string{s[:k], s[k:]})
				products = append(products, int32(id))
			}
		}
	}
	// Dense ranks of the products' scores, highest first.
	distinct := make([]float32, len(products))
	for i, id := range products {
		distinct[i] = scores[id]
	}
	slices.Sort(distinct)
	distinct = slices.Compact(distinct)
	ranks := make([]int32, len(products))
	for i, id := range products {
		k, _ := slices.BinarySearch(distinct, scores[id])
		ranks[i] = int32(len(distinct) - 1 - k)
	}
	return merges, ranks, nil
}

func mergeable(typ int32) bool {
	return typ == TokenNormal || typ == TokenUnused || typ == TokenUndefined
}

// postProcessor sets the TemplateProcessing that adds the BOS and EOS
// asked for; defaultBOS is the BOS id when the file gives none (-1: none)
// and addBOS the default of add_bos_token.
func (v *GGUFVocab) postProcessor(f *fileJSON, defaultBOS int32, addBOS bool) error {
	bos := v.BOS
	if bos < 0 {
		bos = defaultBOS
	}
	if v.AddBOS != nil {
		addBOS = *v.AddBOS
	}
	addEOS := v.AddEOS != nil && *v.AddEOS
	if !addBOS && !addEOS {
		return nil
	}
	// The fields Hugging Face's tokenizers library requires (it refuses
	// a file without type_id, pair or tokens).
	type special struct {
		ID     string `json:"id"`
		TypeID int    `json:"type_id"`
	}
	type piece struct {
		SpecialToken *special `json:"SpecialToken,omitempty"`
		Sequence     *special `json:"Sequence,omitempty"`
	}
	type ids struct {
		ID     string   `json:"id"`
		IDs    []int32  `json:"ids"`
		Tokens []string `json:"tokens"`
	}
	single := []piece{{Sequence: &special{"A", 0}}}
	tokens := map[string]ids{}
	if addBOS {
		switch {
		case bos < 0:
			return fmt.Errorf("tokenizer.ggml.add_bos_token is true but tokenizer.ggml.bos_token_id is missing")
		case int(bos) >= len(v.Tokens):
			return fmt.Errorf("tokenizer.ggml.bos_token_id is missing and llama.cpp's default, %d, is not one of the %d tokens", bos, len(v.Tokens))
		}
		single = slices.Insert(single, 0, piece{SpecialToken: &special{"bos", 0}})
		tokens["bos"] = ids{"bos", []int32{bos}, []string{v.Tokens[bos]}}
	}
	if addEOS {
		if v.EOS < 0 || int(v.EOS) >= len(v.Tokens) {
			return fmt.Errorf("tokenizer.ggml.add_eos_token is true but tokenizer.ggml.eos_token_id is missing or not a token")
		}
		single = append(single, piece{SpecialToken: &special{"eos", 0}})
		tokens["eos"] = ids{"eos", []int32{v.EOS}, []string{v.Tokens[v.EOS]}}
	}
	// A pair: the single template twice, the second sequence B.
	pair := slices.Clone(single)
	for _, p := range single {
		if p.Sequence != nil {
			p = piece{Sequence: &special{"B", 1}}
		} else {
			p = piece{SpecialToken: &special{p.SpecialToken.ID, 1}}
		}
		pair = append(pair, p)
	}
	raw, err := json.Marshal(struct {
		Type          string         `json:"type"`
		Single        []piece        `json:"single"`
		Pair          []piece        `json:"pair"`
		SpecialTokens map[string]ids `json:"special_tokens"`
	}{"TemplateProcessing", single, pair, tokens})
	f.PostProcessor = raw
	return err
}

// fingerprint is the SHA-256 of everything that decides the ids:
// model, pre name, tokens, types, scores, merges, special ids and the
// add_* flags, each length-prefixed.
func (v *GGUFVocab) fingerprint() [32]byte {
	h := sha256.New()
	var buf []byte
	str := func(s string) {
		buf = binary.LittleEndian.AppendUint64(buf, uint64(len(s)))
		buf = append(buf, s...)
	}
	u32 := func(x uint32) { buf = binary.LittleEndian.AppendUint32(buf, x) }
	flush := func() {
		if len(buf) >= 1<<16 {
			h.Write(buf)
			buf = buf[:0]
		}
	}
	str("driftwood gguf vocabulary 1")
	str(v.Model)
	str(v.Pre)
	u32(uint32(len(v.Tokens)))
	for _, s := range v.Tokens {
		str(s)
		flush()
	}
	u32(uint32(len(v.Types)))
	for _, t := range v.Types {
		u32(uint32(t))
		flush()
	}
	u32(uint32(len(v.Scores)))
	for _, s := range v.Scores {
		u32(math.Float32bits(s))
		flush()
	}
	u32(uint32(len(v.Merges)))
	for _, s := range v.Merges {
		str(s)
		flush()
	}
	for _, id := range []int32{v.BOS, v.EOS, v.EOT, v.Unknown, v.Padding} {
		u32(uint32(id))
	}
	for _, b := range []*bool{v.AddBOS, v.AddEOS, v.AddSpacePrefix} {
		switch {
		case b == nil:
			buf = append(buf, 2)
		case *b:
			buf = append(buf, 1)
		default:
			buf = append(buf, 0)
		}
	}
	h.Write(buf)
	return [32]byte(h.Sum(nil))
}
