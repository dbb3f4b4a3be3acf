package conversation

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/internal/golden"
	"github.com/driftwoodlabs/driftwood/sessions"
)

// forcer is a controller that writes a given reply: at the first step of
// each reply it forces ids and stops (without ids it lets the model be).
type forcer struct {
	ids   []int32
	first bool
}

func (f *forcer) StartReply(int, int) { f.first = true }
func (f *forcer) Begin([]int32)       {}
func (f *forcer) End([]float32) engine.Directive {
	if !f.first || len(f.ids) == 0 {
		return engine.Directive{Temperature: -1}
	}
	f.first = false
	return engine.Directive{Force: f.ids, Stop: true, Temperature: -1}
}
func (f *forcer) Running() (sessions.Controller, bool)       { return sessions.Controller{}, false }
func (f *forcer) Store() map[string][]byte                   { return nil }
func (f *forcer) RestoreStore(map[string][]byte) error       { return nil }
func (f *forcer) Resume(sessions.Controller) (string, error) { return "", nil }
func (f *forcer) Off()                                       {}
func (f *forcer) ReplyControls() []sessions.ReplyControl     { return nil }

// TestThinkingRoundTrip: the thinking switch reaches the template (off:
// Qwen3's empty think block closes the prompt), and a session keeps it
// and a reply with its think block, so that the restored conversation
// renders the next turn exactly as the one never saved.
func TestThinkingRoundTrip(t *testing.T) {
	m := load(t, golden.ChatMLModel(t, golden.IMEnd))
	const reply = "<think>\nThey greet me.\n</think>\n\nHello!"
	f := &forcer{ids: m.Tok.Encode(reply)}
	a, err := New(m, Options{Window: 512, Sampler: greedy, MaxTokens: 64, Controller: f})
	if err != nil {
		t.Fatal(err)
	}
	if !a.SwitchesThinking() || a.Thinking() != nil {
		t.Fatalf("Qwen3's template: SwitchesThinking %v, Thinking %v; want true and nil (the template decides)", a.SwitchesThinking(), a.Thinking())
	}
	r, err := a.Send(context.Background(), "Hi", func(Update) error { return nil })
	if err != nil || r.Text != reply {
		t.Fatalf("reply %q, %v; want the forced %q", r.Text, err, reply)
	}
	off := false
	a.SetThinking(&off)
	off = true // SetThinking keeps its own copy
	f.ids = nil
	tokens(t, a, "How are you?")
	prompt := m.Tok.Decode(a.seq.Tokens)
	if !strings.Contains(prompt, "<|im_start|>assistant\n<think>\n\n</think>\n\n") {
		t.Errorf("thinking off, the prompt has no empty think block:\n%q", prompt)
	}

	store := sessions.Store{Dir: t.TempDir()}
	if err := saveAs(t, a, store, "s"); err != nil {
		t.Fatal(err)
	}
	b, err := New(m, Options{Window: 512, Sampler: greedy, MaxTokens: 64, Controller: &forcer{}})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := store.Open("s")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Restore(snap); err != nil {
		t.Fatal(err)
	}
	snap.Close()
	if th := b.Thinking(); th == nil || *th {
		t.Errorf("restored thinking switch %v, want off", th)
	}
	if got := b.Messages()[1].Content; got != reply {
		t.Errorf("restored reply %q, want %q", got, reply)
	}
	want, got := tokens(t, a, "Bye."), tokens(t, b, "Bye.")
	if !slices.Equal(got, want) || !slices.Equal(b.seq.Tokens, a.seq.Tokens) {
		t.Errorf("the next turn after restore differs from the one never saved:\n%q\n%q", m.Tok.Decode(b.seq.Tokens), m.Tok.Decode(a.seq.Tokens))
	}
}
