package conversation

import (
	"context"
	"slices"
	"testing"
)

// TestRepliesKeepTheirIDs: the next prompt holds each reply as the ids it
// was generated as, so the model's state is used whole and only the new
// message is processed, also after a save and restore. The tiny model's
// random replies are the hard case: bytes that are not UTF-8 and
// special-token text, whose text encodes to other ids (before, the second
// turn processed 85 of its 109 prompt tokens again).
func TestRepliesKeepTheirIDs(t *testing.T) {
	rt := load(t, "tiny-f32")
	newConv := func() *Conversation {
		c, err := New(rt, Options{Window: 512, Sampler: greedy, MaxTokens: 24})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	// send sends text and checks that the prompt ran only what the
	// conversation did not hold.
	send := func(c *Conversation, text string) {
		t.Helper()
		held := c.Tokens()
		r, err := c.Send(context.Background(), text, func(Update) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		ids, err := c.encode(c.messages[:len(c.messages)-1], c.dropped, true)
		if err != nil {
			t.Fatal(err)
		}
		if held > 0 && r.Stats.PromptTokens != len(ids)-held {
			t.Errorf("%q: ran %d of %d prompt tokens with %d held; want only the %d new", text, r.Stats.PromptTokens, len(ids), held, len(ids)-held)
		}
	}
	c := newConv()
	changed := false
	for _, text := range []string{"Hello there", "Tell me more", "And more"} {
		send(c, text)
		last := c.messages[len(c.messages)-1].Content
		if !slices.Equal(rt.Tok.Encode(last), c.replyIDs[len(c.replyIDs)-1]) {
			changed = true
		}
	}
	if !changed {
		t.Fatal("no reply encodes to other ids than it was generated as: the test shows nothing")
	}

	b := newConv()
	if err := b.Restore(saved(t, c)); err != nil {
		t.Fatal(err)
	}
	send(b, "Once more")
}
