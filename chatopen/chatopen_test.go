package chatopen

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/chat"
	"github.com/driftwoodlabs/driftwood/hub"
	"github.com/driftwoodlabs/driftwood/internal/golden"
)

// TestOpenRefusesATokenizerLargerThanTheModel: a tokenizer with ids past
// the embedding is refused at open, naming both files, instead of at the
// first such token in the backend.
func TestOpenRefusesATokenizerLargerThanTheModel(t *testing.T) {
	src, dir := golden.ModelDir("tiny-f32"), t.TempDir()
	for _, name := range []string{"config.json", "model.safetensors", "tokenizer_config.json"} {
		abs, _ := filepath.Abs(filepath.Join(src, name))
		if err := os.Symlink(abs, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(filepath.Join(src, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tok map[string]any
	if err := json.Unmarshal(data, &tok); err != nil {
		t.Fatal(err)
	}
	tok["added_tokens"] = append(tok["added_tokens"].([]any), map[string]any{"id": 700, "content": "<|extra|>", "special": true})
	data, _ = json.Marshal(tok)
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Open(context.Background(), dir, Options{Threads: 1, Hub: &hub.Options{Offline: true, CacheDir: t.TempDir()}})
	if err == nil || !strings.Contains(err.Error(), "tokenizer.json has 701 tokens but the model has 512") || !strings.Contains(err.Error(), "config.json") {
		t.Errorf("Open = %v, want the two files named", err)
	}
}

// TestChat: the conversation's window is the request clamped to what the
// model was trained for, it has the system prompt, and its generator
// stops at the chat template's end of turn as well as the model's
// end-of-sequence ids.
func TestChat(t *testing.T) {
	l, err := Open(context.Background(), golden.ModelDir("tiny-f32"), Options{Threads: 1, Hub: &hub.Options{Offline: true, CacheDir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, tc := range []struct {
		reason       string
		context, win int
	}{
		{"a window the model holds is kept", 100, 100},
		{"a longer one is cut to max_position_embeddings", 1 << 20, 512},
		{"0 is the model's longest", 0, 512},
	} {
		conv, err := l.Chat(ChatOptions{Context: tc.context, Sampler: engine.DefaultSamplerConfig(), System: "Be brief."})
		if err != nil {
			t.Fatal(err)
		}
		if got := conv.Window(); got != tc.win {
			t.Errorf("%s: window %d for %d, want %d", tc.reason, got, tc.context, tc.win)
		}
		if msgs := conv.Messages(); len(msgs) != 1 || msgs[0].Content != "Be brief." {
			t.Errorf("messages %+v, want the system prompt", msgs)
		}
		conv.Close()
	}
	eot, ok := l.Tok.TokenID(l.Template.EOS())
	gen := l.Generator(engine.DefaultSamplerConfig(), 7)
	if !ok || gen.MaxTokens != 7 || !slices.Contains(gen.StopTokens, eot) || !slices.Contains(gen.StopTokens, l.Weights.Config.EOSTokenIDs[0]) {
		t.Errorf("generator: max %d, stops %v; want 7 and the end of turn %d (%v)", gen.MaxTokens, gen.StopTokens, eot, ok)
	}
}

// onlyToken is a hook that allows one token at every step.
type onlyToken int32

func (onlyToken) Begin([]int32) {}
func (t onlyToken) End([]float32) engine.Directive {
	return engine.Directive{Allowed: []int32{int32(t)}, Temperature: -1, Candidates: 1}
}

// TestChatMLBaseModelStopsAtEndOfTurn: a model whose eos (config.json,
// generation_config.json, the template's eos_token) is <|end_of_text|>
// but whose ChatML template ends turns with <|im_end|> stops a reply at
// <|im_end|>, as an instruct model does.
func TestChatMLBaseModelStopsAtEndOfTurn(t *testing.T) {
	for _, eos := range []int32{golden.EndOfText, golden.IMEnd} {
		l, err := Open(context.Background(), golden.ChatMLModel(t, eos), Options{Threads: 1, Hub: &hub.Options{Offline: true, CacheDir: t.TempDir()}})
		if err != nil {
			t.Fatal(err)
		}
		if got := l.Weights.Config.EOSTokenIDs; !slices.Equal(got, engine.TokenIDs{eos}) {
			t.Fatalf("the fixture's eos ids are %v, want [%d]", got, eos)
		}
		cache, err := l.Backend.NewCache(256)
		if err != nil {
			t.Fatal(err)
		}
		gen := l.Generator(engine.SamplerConfig{TopP: 1, RepeatPenalty: 1}, 8)
		gen.Hook = onlyToken(golden.IMEnd)
		seq := &engine.Sequence{Cache: cache}
		ids, err := l.Template.Encode(l.Tok, []chat.Message{{Role: "user", Content: "Hi"}}, chat.Options{AddGenerationPrompt: true})
		if err != nil {
			t.Fatal(err)
		}
		st, err := gen.Generate(context.Background(), seq, ids, func(engine.Event) error { return nil })
		if err != nil || st.Reason != engine.StopEOS || st.GenTokens != 0 {
			t.Errorf("eos %d: the reply that can only say <|im_end|> ran %d tokens and stopped by %q (%v); want it to end at once", eos, st.GenTokens, st.Reason, err)
		}
		cache.Close()
		l.Close()
	}
}

// TestTokenizerCache: with a tokenizer cache, the first open writes the
// decoded tokenizer.json there and the next reads it, with the same
// tokenizer (fingerprint and a tokenisation).
func TestTokenizerCache(t *testing.T) {
	cache := t.TempDir()
	open := func() *Loaded {
		t.Helper()
		l, err := Open(context.Background(), golden.ModelDir("tiny-f32"), Options{Threads: 1, Hub: &hub.Options{Offline: true, CacheDir: t.TempDir()}, TokenizerCache: cache})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(l.Close)
		return l
	}
	first := open()
	var entries []string
	for range 500 {
		if entries, _ = filepath.Glob(filepath.Join(cache, "*.bin")); len(entries) == 1 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(entries) != 1 {
		t.Fatalf("%d cache entries, want 1", len(entries))
	}
	second := open()
	text := "Hello, world: 42 rivers."
	if second.Tok.Fingerprint() != first.Tok.Fingerprint() || !slices.Equal(second.Tok.Encode(text), first.Tok.Encode(text)) {
		t.Error("the tokenizer read from the cache differs from the file's")
	}
}
