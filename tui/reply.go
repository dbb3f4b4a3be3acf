package tui

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	tea "charm.land/bubbletea/v2"

	"github.com/driftwoodlabs/driftwood/chatsession"
	"github.com/driftwoodlabs/driftwood/conversation"
	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/sessions"
)

// maxBatch bounds how many updates one tokensArrivedMsg carries.
const maxBatch = 512

// replies runs the chat's replies: it starts a reply's stream, hands it
// the tokens that arrive, and settles the reply when it ends.
type replies struct {
	*chatState
	chatView
	ctx  context.Context
	pace func(n int)
	// stream is the reply being generated (nil: none); nextID numbers
	// the streams, so that the messages of an older one are ignored.
	stream *replyStream
	nextID int
}

// replyStream is one reply being generated, as a component. Its goroutine
// owns the conversation until updates is closed; Update takes the updates
// that arrived, deltas, into the transcript's live reply (where the
// reply's text and tokens are kept, once) and waits for the next ones.
type replyStream struct {
	id int
	// sent is the message replied to ("" for a regeneration).
	sent    string
	cancel  context.CancelFunc
	updates chan conversation.Update
	// held is the context used after the latest update sent.
	held atomic.Int64
	// Set by the goroutine before it closes updates.
	turn chatsession.Turn
	err  error
	used int
	// stopping is set once the user asked the reply to stop.
	stopping bool
	view     *transcript
}

// tokensArrivedMsg carries the updates that arrived since the last one,
// and the context used once they had (read after them, it may count a
// token still on its way).
type tokensArrivedMsg struct {
	id      int
	updates []conversation.Update
	used    int
}

// replyDoneMsg ends a reply, once the chat was saved after it.
type replyDoneMsg struct {
	id   int
	turn chatsession.Turn
	err  error
	used int
}

// start generates a reply to text (or, with regen, the last reply again)
// in a goroutine, which saves the chat after it.
func (r *replies) start(text string, regen bool) tea.Cmd {
	r.nextID++
	ctx, cancel := context.WithCancel(r.ctx)
	s := &replyStream{id: r.nextID, sent: text, cancel: cancel, updates: make(chan conversation.Update, maxBatch), view: r.transcript}
	chat, conv, pace := r.chat, r.conv, r.pace
	go func() {
		defer close(s.updates)
		defer cancel()
		n := 0
		emit := func(u conversation.Update) error {
			n++
			if pace != nil {
				pace(n)
			}
			s.held.Store(int64(conv.Tokens()))
			// Deliver the token whenever there is room, also after a
			// stop: it is part of the reply that is kept.
			select {
			case s.updates <- u:
				return nil
			default:
			}
			select {
			case s.updates <- u:
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
	r.stream = s
	return tea.Batch(s.next, r.status.Tick())
}

// Update passes a reply's tokens to its stream and settles the reply at
// its end; the messages of a reply no longer shown are ignored.
func (r *replies) Update(msg tea.Msg) tea.Cmd {
	s := r.stream
	switch msg := msg.(type) {
	case tokensArrivedMsg:
		if s != nil && msg.id == s.id {
			r.used = msg.used
			return s.Update(msg)
		}
	case replyDoneMsg:
		if s != nil && msg.id == s.id {
			r.stream = nil
			r.settle(s.sent, msg)
		}
	}
	return nil
}

// stop asks the running reply to stop; what it produced is kept.
func (r *replies) stop() {
	if s := r.stream; s != nil && !s.stopping {
		s.stopping = true
		s.cancel()
	}
}

// wait stops a running reply and waits for it to let go of the
// conversation; what it produced is kept.
func (r *replies) wait() {
	if r.stream != nil {
		r.stream.wait()
		r.stream = nil
	}
}

// settle shows how the reply to sent ended.
func (r *replies) settle(sent string, msg replyDoneMsg) {
	var long *conversation.TooLongError
	if errors.As(msg.err, &long) {
		r.refused(sent, long)
		return
	}
	r.used = msg.used
	reply := msg.turn.Reply
	if reply.Compaction != nil {
		r.compacted(*reply.Compaction)
	}
	if err := reply.PrefixErr; err != nil {
		r.logs.add(logLine{source: "driftwood", text: err.Error()})
	}
	if err := msg.turn.SaveErr; err != nil {
		r.notice.fail(fmt.Errorf("the conversation was not saved: %w", err))
	}
	st := reply.Stats
	r.stats = &st
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
	if all := r.conv.ReplyControls(); len(all) > 0 {
		governed = all[len(all)-1]
	}
	r.transcript.endReply(reply.Text, note, governed)
	if msg.err != nil && !errors.Is(msg.err, context.Canceled) {
		text := msg.err.Error()
		if full != nil {
			text = "The context window is full (" + thousands(full.Window) + " tokens), so the reply stops here. The next message takes the oldest turns out of the model's view to make room (/compact does it now; /new starts a new conversation)."
		}
		r.transcript.add(entryError, text)
		r.logs.add(logLine{source: "driftwood", text: msg.err.Error(), fault: true})
	}
}

// refused undoes a message that did not fit the context window: the
// conversation did not take it, so the transcript drops it and the text
// goes back into the input box for the user to shorten.
func (r *replies) refused(sent string, long *conversation.TooLongError) {
	r.takeBack(sent, r.conv.Messages())
	r.notice.fail(fmt.Errorf("not sent: with this message the conversation is %s tokens, more than the context window of %s (%s used); shorten it, or /new starts afresh",
		thousands(long.Tokens), thousands(long.Window), thousands(long.Held)))
}

// compacted shows that the oldest turns left the model's view: the line
// that marks where its view starts, and a notice with the figures.
func (r *replies) compacted(comp conversation.Compaction) {
	r.used = r.conv.Tokens()
	r.transcript.markView(r.conv.Messages(), r.conv.OutOfView())
	how := "the rest stays in the cache"
	if !comp.Shifted {
		how = "the rest is read again"
	}
	r.notice.say(fmt.Sprintf("%s left the model's view: %s → %s tokens (%s)",
		plural(comp.Messages, "older message"), thousands(comp.Before), thousands(comp.After), how))
}

// Update takes the updates that arrived into the transcript, and waits
// for the next ones.
func (s *replyStream) Update(msg tea.Msg) tea.Cmd {
	if m, ok := msg.(tokensArrivedMsg); ok && m.id == s.id {
		s.view.stream(m.updates)
		return s.next
	}
	return nil
}

// activity is what the status bar says of the reply, with its tokens so
// far once there are some.
func (s *replyStream) activity() (string, int) {
	if s.stopping {
		return "stopping", 0
	}
	if n := s.view.liveTokens(); n > 0 {
		return "generating", n
	}
	return "reading the prompt", 0
}

// next waits for the reply's next updates, taking all that are ready, or
// for its end.
func (s *replyStream) next() tea.Msg {
	u, ok := <-s.updates
	if !ok {
		return replyDoneMsg{id: s.id, turn: s.turn, err: s.err, used: s.used}
	}
	batch := []conversation.Update{u}
	for open := true; open && len(batch) < maxBatch; {
		select {
		case u, ok := <-s.updates:
			if open = ok; ok {
				batch = append(batch, u)
			}
		default:
			open = false
		}
	}
	return tokensArrivedMsg{id: s.id, updates: batch, used: int(s.held.Load())}
}

// wait stops the reply and waits for its goroutine to let go of the
// conversation.
func (s *replyStream) wait() {
	s.cancel()
	for range s.updates {
	}
}
