package conversation

import (
	"errors"
	"slices"

	"github.com/driftwoodlabs/driftwood/engine/chat"
)

// Compaction says which turns left the model's view to make room. The
// transcript keeps them; the model no longer sees them.
type Compaction struct {
	// Messages is how many messages left the view now (whole turns, the
	// oldest after the system prompt); Before and After are the
	// conversation's length in tokens with and without them.
	Messages, Before, After int
	// Shifted says the kept turns' keys and values were moved down in the
	// cache (a context shift) rather than processed again.
	Shifted bool
}

// ErrNothingToCompact is Compact's answer when the model sees no more than
// the latest turn.
var ErrNothingToCompact = errors.New("nothing to compact: the model sees only the system prompt and the latest turn")

// OutOfView is how many of the transcript's messages (the oldest, after
// the system prompt) the model no longer sees.
func (c *Conversation) OutOfView() int { return c.dropped }

// Compact takes the oldest turns out of the model's view until the
// conversation is at most half as long as it is now, keeping the system
// prompt and the latest turn; the transcript keeps every turn. Send does
// the same by itself when a message would not leave room for a reply.
func (c *Conversation) Compact() (Compaction, error) {
	ids, err := c.encode(c.messages, c.dropped, false)
	if err != nil {
		return Compaction{}, err
	}
	dropped, kept, err := c.fit(c.messages, c.dropped, ids, len(ids)/2, false)
	if err != nil {
		return Compaction{}, err
	}
	if dropped == c.dropped {
		return Compaction{}, ErrNothingToCompact
	}
	comp := Compaction{Messages: dropped - c.dropped, Before: len(ids), After: len(kept)}
	c.dropped = dropped
	c.changes++
	comp.Shifted = c.realign(kept)
	return comp, nil
}

// CompactsAt is the length from which the next message makes the oldest
// turns leave the view (it must leave room for a reply).
func (c *Conversation) CompactsAt() int { return c.seq.Cache.Window() - c.replyRoom() }

// replyRoom is the room a new message must leave for the reply before the
// oldest turns leave the view: a quarter of the window, or max_tokens
// when that is less.
func (c *Conversation) replyRoom() int {
	room := c.seq.Cache.Window() / 4
	if m := c.opt.MaxTokens; m > 0 {
		room = min(room, m)
	}
	return room
}

// systemLen is 1 when msgs start with a system message, else 0.
func systemLen(msgs []chat.Message) int {
	if len(msgs) > 0 && msgs[0].Role == "system" {
		return 1
	}
	return 0
}

// inView is what the model sees of msgs: the system message, if any, and
// the messages after the dropped ones.
func inView(msgs []chat.Message, dropped int) []chat.Message {
	sys := systemLen(msgs)
	return append(slices.Clip(msgs[:sys]), msgs[sys+dropped:]...)
}

// encode renders and tokenises what the model sees of msgs, each reply as
// the ids it was generated as where they are known, after the imported
// tokens when the message that stands for them is in view
// (afterImported).
func (c *Conversation) encode(msgs []chat.Message, dropped int, prompt bool) ([]int32, error) {
	opt := c.renderOptions()
	opt.AddGenerationPrompt = prompt
	view := inView(msgs, dropped)
	replies := make([][]int32, len(view))
	n, sys := 0, systemLen(msgs)
	for i, m := range msgs {
		if m.Role != "assistant" {
			continue
		}
		if j := i - dropped; i >= sys+dropped && n < len(c.replyIDs) && j < len(view) {
			replies[j] = c.replyIDs[n]
		}
		n++
	}
	if c.imported == nil || dropped > 0 || len(msgs) <= sys {
		return c.rt.Template.EncodeReplies(c.rt.Tok, view, opt, replies)
	}
	view = slices.Delete(slices.Clone(view), sys, sys+1)
	replies = slices.Delete(replies, sys, sys+1)
	if len(view) == sys {
		return slices.Clone(c.imported), nil
	}
	rest, err := c.rt.Template.EncodeReplies(c.rt.Tok, view, opt, replies)
	if err != nil {
		return nil, err
	}
	return c.afterImported(rest, view[:sys]), nil
}

// afterImported is the imported tokens followed by rest, the rendering of
// the messages after them (head is its system message, if any). When the
// imported tokens are the template's opening of a first user message and
// plain text after it (what mlx_lm.cache_prompt saves: the message left
// open), the next user message continues that text, as mlx_lm.generate
// continues such a cache: rest goes on after its own such opening.
// Otherwise rest follows them whole, less the special tokens the
// tokenizer puts before a text (a second BOS).
func (c *Conversation) afterImported(rest []int32, head []chat.Message) []int32 {
	imp := c.imported
	shared, err := c.rt.Template.SharedPrefix(c.rt.Tok, head, c.renderOptions())
	if err == nil && len(shared) > 0 && hasPrefix(imp, shared) && hasPrefix(rest, shared) && !slices.ContainsFunc(imp[len(shared):], c.rt.Tok.IsSpecial) {
		return slices.Concat(imp, rest[len(shared):])
	}
	lead := c.rt.Tok.AddSpecialTokens([]int32{-1})
	lead = lead[:slices.Index(lead, -1)]
	if len(lead) > 0 && hasPrefix(imp, lead) && hasPrefix(rest, lead) {
		rest = rest[len(lead):]
	}
	return slices.Concat(imp, rest)
}

// hasPrefix reports whether ids begin with prefix.
func hasPrefix(ids, prefix []int32) bool {
	return len(ids) >= len(prefix) && slices.Equal(ids[:len(prefix)], prefix)
}

// renderOptions are the chat template's inputs besides the messages and
// the generation prompt.
func (c *Conversation) renderOptions() chat.Options {
	return chat.Options{Now: c.created, EnableThinking: c.thinking}
}

// fit drops the oldest whole turns of msgs in view (a user message and
// what follows it up to the next one) until the rendering is at most
// target tokens or only the latest turn is left, and returns the new
// count of dropped messages and the rendering (ids is the rendering with
// dropped messages out of view).
func (c *Conversation) fit(msgs []chat.Message, dropped int, ids []int32, target int, prompt bool) (int, []int32, error) {
	sys := systemLen(msgs)
	last := len(msgs) - 1
	for last >= sys && msgs[last].Role != "user" {
		last--
	}
	for len(ids) > target {
		next := sys + dropped + 1
		for next < len(msgs) && msgs[next].Role != "user" {
			next++
		}
		if next > last {
			break
		}
		var err error
		if ids, err = c.encode(msgs, next-sys, prompt); err != nil {
			return 0, nil, err
		}
		dropped = next - sys
	}
	return dropped, ids, nil
}

// realign makes the cache hold the longest prefix of ids it can without
// processing anything: the common prefix, then, when the kept turns are
// in the cache further on, those moved down over the dropped ones
// (engine.Config.ShiftKV). It reports whether it moved any. What it
// cannot keep is processed again by the next reply.
func (c *Conversation) realign(ids []int32) bool {
	held := c.seq.Tokens
	start := commonPrefix(held, ids)
	drop, keep := 0, 0
	for j := start + 1; start < len(ids) && j < len(held); j++ {
		if held[j] == ids[start] {
			if m := commonPrefix(held[j:], ids[start:]); m > keep {
				drop, keep = j-start, m
			}
		}
	}
	if keep == 0 {
		c.truncate(start)
		return false
	}
	kv, err := c.seq.Cache.Export()
	if err == nil {
		kv, err = c.rt.Weights.Config.ShiftKV(kv, start, drop, keep)
	}
	if err == nil {
		err = c.seq.Cache.Import(kv)
	}
	if err != nil {
		// The cache is as it was, or empty after a failed import; either
		// way the next reply processes what is missing.
		c.truncate(min(start, c.seq.Cache.Len()))
		return false
	}
	c.seq.Tokens = append(held[:start], held[start+drop:start+drop+keep]...)
	return true
}

// commonPrefix is the length of the longest common prefix of a and b.
func commonPrefix(a, b []int32) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
