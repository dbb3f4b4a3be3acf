package conversation

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/driftwoodlabs/driftwood/sessions"
)

const system = "You are a terse assistant."

// send sends text and returns the reply, failing the test on an error.
func send(t *testing.T, c *Conversation, text string) Reply {
	t.Helper()
	r, err := c.Send(context.Background(), text, func(Update) error { return nil })
	if err != nil {
		t.Fatalf("%q: %v", text, err)
	}
	return r
}

// sees is the text the model holds, decoded.
func sees(c *Conversation) string { return c.rt.Tok.Decode(c.seq.Tokens) }

// TestPastTheWindow: twelve turns of about sixty tokens on a 512-token
// window all get replies; the oldest turns leave the model's view (the
// system prompt stays), the transcript keeps every turn, and each
// compaction leaves at most half the window.
func TestPastTheWindow(t *testing.T) {
	m := load(t, "tiny-f32")
	c, _ := New(m, Options{Window: 512, Sampler: greedy, MaxTokens: 24})
	c.SetSystem(system)
	compactions := 0
	for i := range 12 {
		msg := fmt.Sprintf("Turn %d: tell me one more thing about rivers.", i)
		r := send(t, c, msg)
		if r.Compaction != nil {
			compactions++
			comp := r.Compaction
			if comp.Messages < 2 || comp.Messages%2 != 0 || comp.After > 256 || comp.Before+c.replyRoom() <= 512 {
				t.Errorf("turn %d: compaction %+v", i, *comp)
			}
			if !comp.Shifted {
				t.Errorf("turn %d: the kept turns were not shifted in the cache (%+v)", i, *comp)
			}
		}
		if r.Stats.GenTokens == 0 {
			t.Errorf("turn %d: empty reply", i)
		}
		if got := sees(c); !strings.Contains(got, system) || !strings.Contains(got, msg) {
			t.Fatalf("turn %d: the model holds %q", i, got)
		}
	}
	t.Logf("%d compactions, %d messages out of view", compactions, c.OutOfView())
	if compactions == 0 || c.OutOfView() == 0 {
		t.Fatalf("%d compactions, %d messages out of view", compactions, c.OutOfView())
	}
	if n := len(c.Messages()); n != 25 {
		t.Errorf("the transcript has %d messages, want 25", n)
	}
	gone := c.Messages()[1].Content
	if strings.Contains(sees(c), gone) {
		t.Errorf("the model still holds %q, out of view", gone)
	}
}

// TestCompactSessionResumes compacts on demand, then checks that a
// session keeps the view: restored with its KV state, the next reply is
// the one the unsaved conversation gives; restored as a transcript, the
// model sees the same messages.
func TestCompactSessionResumes(t *testing.T) {
	m := load(t, "tiny-f32")
	c, _ := New(m, Options{Window: 512, Sampler: greedy, MaxTokens: 16})
	c.SetSystem(system)
	if _, err := c.Compact(); !errors.Is(err, ErrNothingToCompact) {
		t.Errorf("Compact of an empty conversation: %v", err)
	}
	first := "The first question is about lakes."
	send(t, c, first)
	if _, err := c.Compact(); !errors.Is(err, ErrNothingToCompact) {
		t.Errorf("Compact of one turn: %v", err)
	}
	send(t, c, "The second is about seas.")
	send(t, c, "The third is about glaciers.")
	comp, err := c.Compact() // down to the latest turn: half is not reachable
	if err != nil {
		t.Fatal(err)
	}
	if comp.Messages != 4 || comp.After >= comp.Before || c.Tokens() > comp.After || !comp.Shifted || c.OutOfView() != 4 {
		t.Fatalf("Compact = %+v; %d tokens held, %d out of view", comp, c.Tokens(), c.OutOfView())
	}
	if strings.Contains(sees(c), first) || !strings.Contains(sees(c), "glaciers") {
		t.Fatalf("after Compact the model holds %q", sees(c))
	}
	store := sessions.Store{Dir: t.TempDir()}
	if err := saveAs(t, c, store, "s"); err != nil {
		t.Fatal(err)
	}
	want := send(t, c, "And ponds?")

	kv, _ := New(m, Options{Window: 512, Sampler: greedy, MaxTokens: 16})
	snap, err := store.Open("s")
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	if err := kv.Restore(snap); err != nil {
		t.Fatal(err)
	}
	if kv.OutOfView() != 4 || len(kv.Messages()) != 7 {
		t.Fatalf("restored: %d out of view, %d messages", kv.OutOfView(), len(kv.Messages()))
	}
	if got := send(t, kv, "And ponds?"); got.Text != want.Text || got.Stats.PromptTokens != want.Stats.PromptTokens {
		t.Errorf("restored: %q from %d prompt tokens, unsaved: %q from %d", got.Text, got.Stats.PromptTokens, want.Text, want.Stats.PromptTokens)
	}

	text, _ := New(m, Options{Window: 512, Sampler: greedy, MaxTokens: 16})
	if err := text.RestoreTranscript(snap.Meta); err != nil {
		t.Fatal(err)
	}
	send(t, text, "And ponds?")
	if got := sees(text); strings.Contains(got, first) || !strings.Contains(got, "glaciers") || !strings.Contains(got, system) {
		t.Errorf("restored as a transcript, the model holds %q", got)
	}
}

// TestRealignFallsBack: when the kept turns are not in the cache, the
// cache keeps the common prefix and the rest is processed again.
func TestRealignFallsBack(t *testing.T) {
	m := load(t, "tiny-f32")
	c, _ := New(m, Options{Window: 512, Sampler: greedy, MaxTokens: 8})
	send(t, c, "Hello there")
	held := slices.Clone(c.seq.Tokens)
	other := append(slices.Clone(held[:5]), 1, 2, 3)
	if c.realign(other) || c.Tokens() != 5 || !slices.Equal(c.seq.Tokens, held[:5]) {
		t.Errorf("realign to unrelated tokens kept %d: %v", c.Tokens(), c.seq.Tokens)
	}
}

// TestClearRestoresTheView: /clear brings every kept message back in view.
func TestClearRestoresTheView(t *testing.T) {
	m := load(t, "tiny-f32")
	c, _ := New(m, Options{Window: 512, Sampler: greedy, MaxTokens: 8})
	send(t, c, "one")
	send(t, c, "two")
	if _, err := c.Compact(); err != nil {
		t.Fatal(err)
	}
	c.Clear()
	if c.OutOfView() != 0 {
		t.Errorf("after Clear, %d messages out of view", c.OutOfView())
	}
}
