// Package sdktest runs controllers natively, the way the host runs them
// through Wasm: a fake Host with an in-memory key-value store, the real
// vocabulary format, and a Session that drives Init, Begin and Step with
// seeded random sampling among the allowed tokens, applying backtrack,
// force, stop and the mask exactly as controllers/ABI.md says.
package sdktest

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/driftwoodlabs/driftwood/controllers/sdk"
	"github.com/driftwoodlabs/driftwood/engine/tokenizer"
)

// Host is a fake sdk.Host: the key-value store is a map, log lines are
// kept, and Tokenize calls Tok (nil: it returns nothing).
type Host struct {
	KV   map[string][]byte
	Logs []string
	Tok  func(text string) []int32
}

// NewHost returns a Host that tokenizes with tok (may be nil).
func NewHost(tok func(string) []int32) *Host {
	return &Host{KV: map[string][]byte{}, Tok: tok}
}

// Log keeps msg.
func (h *Host) Log(msg string) { h.Logs = append(h.Logs, msg) }

// KVGet returns a copy of key's value.
func (h *Host) KVGet(key string) ([]byte, bool) {
	v, ok := h.KV[key]
	return append([]byte(nil), v...), ok
}

// KVSet sets key.
func (h *Host) KVSet(key string, val []byte) bool {
	h.KV[key] = append([]byte(nil), val...)
	return true
}

// KVAppend appends val to key's value.
func (h *Host) KVAppend(key string, val []byte) bool {
	h.KV[key] = append(h.KV[key], val...)
	return true
}

// Tokenize calls Tok.
func (h *Host) Tokenize(text string) []int32 {
	if h.Tok == nil {
		return nil
	}
	return h.Tok(text)
}

// Llama3 is the real Llama 3 vocabulary of testdata/llama3-tokenizer,
// passed through abi.AppendVocab and sdk.ParseVocab as a host would hand
// it over, with its tokenizer.
type Llama3 struct {
	Vocab     *sdk.Vocab
	Tokenizer *tokenizer.Tokenizer
}

var (
	llamaOnce sync.Once
	llama     *Llama3
	llamaErr  error
)

// LoadLlama3 loads the Llama 3 tokenizer once per process, looking for
// testdata/llama3-tokenizer/tokenizer.json.gz in the working directory
// and its parents.
func LoadLlama3() (*Llama3, error) {
	llamaOnce.Do(func() { llama, llamaErr = loadLlama3() })
	return llama, llamaErr
}

func loadLlama3() (*Llama3, error) {
	dir, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	rel := filepath.Join("testdata", "llama3-tokenizer", "tokenizer.json.gz")
	for {
		path := filepath.Join(dir, rel)
		if _, err := os.Stat(path); err == nil {
			tok, err := tokenizer.Load(path)
			if err != nil {
				return nil, err
			}
			return &Llama3{Vocab: VocabOf(tok), Tokenizer: tok}, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return nil, fmt.Errorf("sdktest: %s not found above the working directory", rel)
		}
		dir = parent
	}
}

// VocabOf returns tok's vocabulary as a guest sees it.
func VocabOf(tok *tokenizer.Tokenizer) *sdk.Vocab {
	n := tok.VocabSize()
	tokens := make([][]byte, n)
	special := make([]bool, n)
	for id := range n {
		tokens[id] = tok.TokenBytes(int32(id))
		special[id] = tok.IsSpecial(int32(id))
	}
	return sdk.NewVocab(tokens, special)
}

// Host returns a fake host that tokenizes with the Llama 3 tokenizer.
func (l *Llama3) Host() *Host { return NewHost(l.Tokenizer.Encode) }

// Session is one controller instance serving replies, as the host runs
// it.
type Session struct {
	C     sdk.Controller
	Vocab *sdk.Vocab
	Host  *Host
	// End holds the tokens that end a reply when sampled (by default the
	// vocabulary's end-of-turn token).
	End []int32

	plain  []int32 // ordinary tokens, sampled when there is no mask
	result sdk.Result
}

// NewSession calls c.Load (when c is an sdk.Loader) and c.Init with arg,
// v and h, as the host does.
func NewSession(c sdk.Controller, arg string, v *sdk.Vocab, h *Host) (*Session, error) {
	if l, ok := c.(sdk.Loader); ok {
		l.Load(v)
	}
	if err := c.Init(arg, v, h); err != nil {
		return nil, err
	}
	s := &Session{C: c, Vocab: v, Host: h}
	if eot, ok := v.EndOfTurn(); ok {
		s.End = []int32{eot}
	}
	for id := range int32(v.Len()) {
		if len(v.Token(id)) > 0 && !v.IsSpecial(id) {
			s.plain = append(s.plain, id)
		}
	}
	return s, nil
}

// ByteVocab is a small vocabulary for quick tests and fuzzing: every
// single byte (ids 0-255), a few words and, last, <|eot_id|> (special).
func ByteVocab() *sdk.Vocab {
	var tokens [][]byte
	for b := range 256 {
		tokens = append(tokens, []byte{byte(b)})
	}
	for _, w := range []string{" the", "ing", "\":", "{\"", "\"}", "[\"", "true", "null", "12", "é", " a", "Hello"} {
		tokens = append(tokens, []byte(w))
	}
	tokens = append(tokens, []byte("<|eot_id|>"))
	special := make([]bool, len(tokens))
	special[len(tokens)-1] = true
	return sdk.NewVocab(tokens, special)
}

// Fuzz runs a reply of the controller new makes, with arg, over
// ByteVocab: an argument the controller cannot take must give an error
// from Init, never a panic, and a reply must not panic either.
func Fuzz(t testing.TB, new func() sdk.Controller, arg string, seed uint64) {
	s, err := NewSession(new(), arg, byteVocab(), NewHost(nil))
	if err != nil {
		return
	}
	if _, err := s.Reply(Options{Seed: seed, MaxTokens: 24, EndBias: 0.2}); err != nil {
		t.Fatalf("argument %q: %v", arg, err)
	}
}

var byteVocab = sync.OnceValue(ByteVocab)
