package conversation

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/chat"
	"github.com/driftwoodlabs/driftwood/sessions"
)

// importAs saves the model state of ids on rt's model as an imported
// session name, as `driftwood sessions import` does, and restores it
// into a new conversation.
func importAs(t *testing.T, rt Runtime, store sessions.Store, name string, ids []int32) *Conversation {
	t.Helper()
	cache, err := rt.Backend.NewCache(512)
	if err != nil {
		t.Fatal(err)
	}
	defer cache.Close()
	if err := rt.Backend.Forward(cache, ids, make([]float32, rt.Weights.Config.VocabSize)); err != nil {
		t.Fatal(err)
	}
	kv, err := cache.Export()
	if err != nil {
		t.Fatal(err)
	}
	claim, err := store.Claim(name)
	if err != nil {
		t.Fatal(err)
	}
	defer claim.Release()
	if err := claim.Save(ImportedSession(rt, ids, time.Now(), greedy), kv); err != nil {
		t.Fatal(err)
	}
	return restored(t, rt, store, name)
}

func restored(t *testing.T, rt Runtime, store sessions.Store, name string) *Conversation {
	t.Helper()
	snap, err := store.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	c, err := New(rt, Options{Window: 512, Sampler: greedy, MaxTokens: 8})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Restore(snap); err != nil {
		t.Fatal(err)
	}
	return c
}

// reference is the greedy reply to ids on a fresh cache: what a
// conversation holding ids must reply.
func reference(t *testing.T, rt Runtime, ids []int32) []int32 {
	t.Helper()
	cache, err := rt.Backend.NewCache(512)
	if err != nil {
		t.Fatal(err)
	}
	defer cache.Close()
	var out []int32
	gen := rt.Generator(greedy, 8)
	if _, err := gen.Generate(context.Background(), &engine.Sequence{Cache: cache}, ids, func(e engine.Event) error {
		if e.Token >= 0 {
			out = append(out, e.Token)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// turn sends text and checks that only the tokens after those the model
// held were processed and that the reply is the one for the whole
// prompt; it returns the prompt.
func turn(t *testing.T, c *Conversation, text string) []int32 {
	t.Helper()
	held := slices.Clone(c.seq.Tokens)
	var reply []int32
	r, err := c.Send(context.Background(), text, func(u Update) error {
		if u.Event.Token >= 0 {
			reply = append(reply, u.Event.Token)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	msgs := c.Messages()
	prompt, err := c.encode(msgs[:len(msgs)-1], c.dropped, true)
	if err != nil {
		t.Fatal(err)
	}
	if !hasPrefix(prompt, held) || r.Stats.PromptTokens != len(prompt)-len(held) {
		t.Errorf("%q: processed %d tokens of a prompt of %d; the model held %d of them, which the prompt begins with: %v", text, r.Stats.PromptTokens, len(prompt), len(held), hasPrefix(prompt, held))
	}
	if want := reference(t, c.rt, prompt); !slices.Equal(reply, want) {
		t.Errorf("%q: replied %v, want %v", text, reply, want)
	}
	return slices.Clone(prompt)
}

// TestImportedText: a model state of plain text (BOS and a sentence, no
// chat template) restores as a session of one imported message; the
// next message's rendering follows the tokens without a second BOS, and
// later turns, a save and a restore reuse the cache.
func TestImportedText(t *testing.T) {
	rt := load(t, "tiny-f32")
	store := sessions.Store{Dir: t.TempDir()}
	ids := rt.Tok.AddSpecialTokens(rt.Tok.Encode("The tide is out and the boats rest on the sand"))
	c := importAs(t, rt, store, "s", ids)
	if c.Tokens() != len(ids) || c.Imported() != len(ids) || len(c.Messages()) != 1 || c.Messages()[0].Role != "user" || c.Messages()[0].Content != rt.Tok.Decode(ids) {
		t.Fatalf("restored %d tokens (%d imported), messages %q", c.Tokens(), c.Imported(), c.Messages())
	}
	prompt := turn(t, c, "What rests?")
	rest, err := rt.Template.Encode(rt.Tok, []chat.Message{{Role: "user", Content: "What rests?"}}, chat.Options{AddGenerationPrompt: true, Now: c.created})
	if err != nil {
		t.Fatal(err)
	}
	if want := slices.Concat(ids, rest[1:]); !slices.Equal(prompt, want) {
		t.Errorf("prompt %q, want %q", rt.Tok.Decode(prompt), rt.Tok.Decode(want))
	}
	turn(t, c, "And the gulls?")
	if err := saveAs(t, c, store, "s"); err != nil {
		t.Fatal(err)
	}
	c = restored(t, rt, store, "s")
	if c.Imported() != len(ids) || len(c.Messages()) != 5 {
		t.Fatalf("restored again: %d imported, %d messages", c.Imported(), len(c.Messages()))
	}
	turn(t, c, "Where?")

	// Once the imported message leaves the view, the session says none
	// are, and the rest renders as usual.
	if _, err := c.Compact(); err != nil {
		t.Fatal(err)
	}
	if c.OutOfView() == 0 || c.Imported() != 0 {
		t.Fatalf("compacted: %d out of view, %d imported", c.OutOfView(), c.Imported())
	}
	snap := saved(t, c)
	if snap.Meta.Imported != 0 || snap.Meta.OutOfView != c.OutOfView() {
		t.Errorf("saved after compaction: imported %d, out of view %d", snap.Meta.Imported, snap.Meta.OutOfView)
	}
}

// TestImportedOpenMessage: the state mlx_lm.cache_prompt saves, the chat
// template's opening of a user message and its text, is continued by
// the next message as mlx_lm.generate continues it: the text goes on in
// the same message.
func TestImportedOpenMessage(t *testing.T) {
	rt := load(t, "tiny-f32")
	store := sessions.Store{Dir: t.TempDir()}
	opening, err := rt.Template.SharedPrefix(rt.Tok, nil, chat.Options{Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	ids := slices.Concat(opening, rt.Tok.Encode("A long text about the tide."))
	c := importAs(t, rt, store, "s", ids)
	prompt := turn(t, c, "What is it about?")
	want, err := rt.Template.Encode(rt.Tok, []chat.Message{{Role: "user", Content: "A long text about the tide.What is it about?"}}, chat.Options{AddGenerationPrompt: true, Now: c.created})
	if err != nil {
		t.Fatal(err)
	}
	if got := rt.Tok.Decode(prompt); got != rt.Tok.Decode(want) {
		t.Errorf("prompt %q, want %q", got, rt.Tok.Decode(want))
	}
	turn(t, c, "Say more.")
	if got := rt.Tok.Decode(c.seq.Tokens); strings.Count(got, "<|start_header_id|>system") != 1 {
		t.Errorf("the model holds %q: one system block wanted", got)
	}
}

// TestImportedOnAnotherModel: restored on a model with the same tokenizer
// but other weights, an imported session's tokens are processed again as
// they are; with another tokenizer, its message is text.
func TestImportedOnAnotherModel(t *testing.T) {
	rt := load(t, "tiny-f32")
	store := sessions.Store{Dir: t.TempDir()}
	ids := rt.Tok.AddSpecialTokens(rt.Tok.Encode("The tide is out"))
	importAs(t, rt, store, "s", ids)
	snap, err := store.Open("s")
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	other := load(t, "tiny-untied-f32")
	c, err := New(other, Options{Window: 512, Sampler: greedy, MaxTokens: 8})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Restore(snap); err == nil {
		t.Fatal("restored on another model")
	}
	if err := c.RestoreTranscript(snap.Meta); err != nil {
		t.Fatal(err)
	}
	if c.Imported() != len(ids) {
		t.Fatalf("%d imported tokens kept, want %d", c.Imported(), len(ids))
	}
	prompt := turn(t, c, "What rests?")
	if !hasPrefix(prompt, ids) {
		t.Errorf("prompt %q does not begin with the imported tokens", other.Tok.Decode(prompt))
	}
	meta := snap.Meta
	meta.TokenizerFingerprint = "another"
	if err := c.RestoreTranscript(meta); err != nil {
		t.Fatal(err)
	}
	if c.Imported() != 0 || len(c.Messages()) != 1 {
		t.Errorf("another tokenizer: %d imported tokens kept, %d messages", c.Imported(), len(c.Messages()))
	}
}
