package tui

import (
	"context"
	"errors"
	"fmt"

	tea "charm.land/bubbletea/v2"

	"github.com/driftwoodlabs/driftwood/chatsession"
	"github.com/driftwoodlabs/driftwood/conversation"
	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/sessions"
)

// maxBatch bounds how many updates one tokensArrivedMsg carries.
const maxBatch = 512

// replyStream is a reply being generated. The conversation belongs to its
// goroutine until updates is closed; the program reads the updates with
// next, which re-schedules itself until the reply is done.
type replyStream struct {
	id int
	// text is the message replied to ("" for a regeneration).
	text    string
	cancel  context.CancelFunc
	updates chan replyUpdate
	// Set by the goroutine before it closes updates.
	turn chatsession.Turn
	err  error
	used int
	// tokens counts the reply's tokens (the program's count).
	tokens int
	// stopping is set once the user asked the reply to stop.
	stopping bool
}

// replyUpdate is one update and the context used after it.
type replyUpdate struct {
	conversation.Update
	used int
}

// tokensArrivedMsg carries the updates that arrived since the last one.
type tokensArrivedMsg struct {
	id      int
	updates []replyUpdate
}

// replyDoneMsg ends a reply, once the chat was saved after it.
type replyDoneMsg struct {
	id   int
	turn chatsession.Turn
	err  error
	used int
}

// startReply generates a reply to text (or, with regen, the last reply
// again) in a goroutine, which saves the chat after it.
func (p *chatPage) startReply(text string, regen bool) tea.Cmd {
	p.nextID++
	ctx, cancel := context.WithCancel(p.ctx)
	s := &replyStream{id: p.nextID, text: text, cancel: cancel, updates: make(chan replyUpdate, maxBatch)}
	chat, conv, pace := p.chat, p.conv, p.pace
	go func() {
		defer close(s.updates)
		defer cancel()
		n := 0
		emit := func(u conversation.Update) error {
			n++
			if pace != nil {
				pace(n)
			}
			ru := replyUpdate{Update: u, used: conv.Tokens()}
			// Deliver the token whenever there is room, also after a
			// stop: it is part of the reply that is kept.
			select {
			case s.updates <- ru:
				return nil
			default:
			}
			select {
			case s.updates <- ru:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if regen {
			s.turn, s.err = chat.Regenerate(ctx, emit)
		} else {
			s.turn, s.err = chat.Send(ctx, text, emit)
		}
		s.used = conv.Tokens()
	}()
	p.reply = s
	return tea.Batch(s.next, p.status.Tick())
}

// next waits for the reply's next updates, taking all that are ready, or
// for its end.
func (s *replyStream) next() tea.Msg {
	u, ok := <-s.updates
	if !ok {
		return replyDoneMsg{id: s.id, turn: s.turn, err: s.err, used: s.used}
	}
	batch := []replyUpdate{u}
	for len(batch) < maxBatch {
		select {
		case u, ok := <-s.updates:
			if !ok {
				return tokensArrivedMsg{id: s.id, updates: batch}
			}
			batch = append(batch, u)
		default:
			return tokensArrivedMsg{id: s.id, updates: batch}
		}
	}
	return tokensArrivedMsg{id: s.id, updates: batch}
}

// wait stops the reply and waits for its goroutine to let go of the
// conversation.
func (s *replyStream) wait() {
	s.cancel()
	for range s.updates {
	}
}

// stopReply asks the running reply to stop (what it produced is kept),
// or takes back the message that waits for a controller switch.
func (p *chatPage) stopReply() {
	if q := p.queued; q != nil {
		p.queued = nil
		p.unqueue(q)
		p.notice.say("not sent: " + p.switchingName() + " is still starting")
		return
	}
	if p.reply != nil && !p.reply.stopping {
		p.reply.stopping = true
		p.reply.cancel()
	}
}

// onTokens streams updates into the transcript.
func (p *chatPage) onTokens(msg tokensArrivedMsg) tea.Cmd {
	if p.reply == nil || msg.id != p.reply.id {
		return nil
	}
	us := make([]conversation.Update, len(msg.updates))
	for i, u := range msg.updates {
		us[i] = u.Update
		if u.Event.Token >= 0 {
			p.reply.tokens++
		}
		p.reply.tokens -= u.Event.Backtrack
	}
	p.transcript.applyUpdates(us)
	p.used = msg.updates[len(msg.updates)-1].used
	return p.reply.next
}

// onReplyDone settles the reply.
func (p *chatPage) onReplyDone(msg replyDoneMsg) {
	if p.reply == nil || msg.id != p.reply.id {
		return
	}
	text := p.reply.text
	p.reply = nil
	var long *conversation.TooLongError
	if errors.As(msg.err, &long) {
		p.refused(text, long)
		return
	}
	p.used = msg.used
	reply := msg.turn.Reply
	if reply.Compaction != nil {
		p.compacted(*reply.Compaction)
	}
	if err := reply.PrefixErr; err != nil {
		p.logs.add(logLine{source: "driftwood", text: err.Error()})
	}
	if err := msg.turn.SaveErr; err != nil {
		p.notice.fail(fmt.Errorf("the conversation was not saved: %w", err))
	}
	st := reply.Stats
	p.stats = &st
	note := ""
	var full *engine.ContextFullError
	switch {
	case errors.Is(msg.err, context.Canceled):
		note = "stopped"
	case errors.As(msg.err, &full):
		note = "stopped: the context window is full"
	case msg.err != nil:
		note = "failed"
	case st.Reason == engine.StopMaxTokens:
		note = "cut at max_tokens (/set max_tokens N changes it)"
	case st.Reason == engine.StopHook:
		note = "ended by the controller"
	}
	var governed []sessions.ReplyControl
	if all := p.conv.ReplyControls(); len(all) > 0 {
		governed = all[len(all)-1]
	}
	p.transcript.endReply(reply.Text, note, governed)
	if msg.err != nil && !errors.Is(msg.err, context.Canceled) {
		text := msg.err.Error()
		if full != nil {
			text = "The context window is full (" + thousands(full.Window) + " tokens), so the reply stops here. The next message takes the oldest turns out of the model's view to make room (/compact does it now; /new starts a new conversation)."
		}
		p.transcript.add(entryError, text)
		p.logs.add(logLine{source: "driftwood", text: msg.err.Error(), fault: true})
	}
}

// refused undoes a message that did not fit the context window: the
// conversation did not take it, so the transcript drops it and the text
// goes back into the input box for the user to shorten.
func (p *chatPage) refused(text string, long *conversation.TooLongError) {
	p.transcript.unsend(text != "", p.conv.Messages())
	if text != "" && p.input.Value() == "" {
		p.input.SetValue(text)
	}
	p.notice.fail(fmt.Errorf("not sent: with this message the conversation is %s tokens, more than the context window of %s (%s used); shorten it, or /new starts afresh",
		thousands(long.Tokens), thousands(long.Window), thousands(long.Held)))
}

// compacted shows that the oldest turns left the model's view: the line
// that marks where its view starts, and a notice with the figures.
func (p *chatPage) compacted(comp conversation.Compaction) {
	p.used = p.conv.Tokens()
	p.transcript.markView(p.conv.Messages(), p.conv.OutOfView())
	how := "the rest stays in the cache"
	if !comp.Shifted {
		how = "the rest is read again"
	}
	p.notice.say(fmt.Sprintf("%s left the model's view: %s → %s tokens (%s)",
		plural(comp.Messages, "older message"), thousands(comp.Before), thousands(comp.After), how))
}
