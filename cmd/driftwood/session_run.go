package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/driftwoodlabs/driftwood/chatopen"
	"github.com/driftwoodlabs/driftwood/chatsession"
	"github.com/driftwoodlabs/driftwood/conversation"
	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/sessions"
)

// sessionPatience is how long `run --session` waits for a session that
// another process holds.
const sessionPatience = 30 * time.Second

// findSession names the session `run --session NAME` / `--continue`
// continues and, when no --model was given, takes the session's own
// model as the one to open (saying so).
func findSession(g *genFlags, store sessions.Store, name string, latest bool, errOut io.Writer) (chatsession.Target, error) {
	t, err := chatsession.Find(store, name, latest)
	if err != nil {
		return t, err
	}
	if src, ok := t.Model(); ok && !g.set["model"] {
		g.model = src.Name()
		fmt.Fprintf(errOut, "session %s: its model, %s\n", t.Name, src)
	}
	return t, nil
}

// sessionRun is one `run --session` / `run --continue`.
type sessionRun struct {
	g         *genFlags
	l         *chatopen.Loaded
	cs        *controllerSet // nil when the model has no tokenizer
	cf        controllerFlags
	store     sessions.Store
	name      string
	prompt    string
	system    string
	ignoreEOS bool
	// think, when set, is the thinking switch from now on (else the
	// session's).
	think *bool
}

// runSession continues the session (or starts it), replies to the prompt
// through p and saves it, also when the reply was cut short by Ctrl-C.
func runSession(ctx context.Context, r sessionRun, p *printer, errOut io.Writer) (engine.Stats, error) {
	conv, err := newConversation(r.g, r.l, r.cs, "", r.ignoreEOS)
	if err != nil {
		return engine.Stats{}, err
	}
	defer conv.Close()
	// The session is held from before it is read until after it is
	// saved, so that a turn made meanwhile by another process is never
	// lost.
	opt := chatsession.Options{Store: r.store, Patience: sessionPatience, KeepController: r.cf.name != "" || r.cs == nil,
		Waiting: func(b *sessions.BusyError) { fmt.Fprintf(errOut, "%v; waiting up to %s…\n", b, sessionPatience) }}
	c, rep, err := chatsession.Open(conv, opt, r.name)
	if err != nil {
		return engine.Stats{}, err
	}
	defer c.Close()
	reportOpen(rep, errOut)
	if rep.New {
		conv.SetSystem(r.system)
	} else if r.g.samplingSet() {
		if err := conv.SetSampler(r.g.sampling); err != nil {
			return engine.Stats{}, err
		}
	}
	if r.think != nil {
		conv.SetThinking(r.think)
	}
	turn, err := c.Send(ctx, r.prompt, func(u conversation.Update) error { return p.event(u.Event) })
	p.flush()
	if comp := turn.Compaction; comp != nil {
		fmt.Fprintf(errOut, "note: to make room, the oldest %d messages left the model's view (%d → %d tokens); the session keeps them\n", comp.Messages, comp.Before, comp.After)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		if turn.Saved != "" { // what the reply had made before the error
			fmt.Fprintf(errOut, "saved session %s (%d tokens)\n", c.Name(), conv.Tokens())
		}
		return turn.Stats, errors.Join(err, turn.SaveErr)
	}
	if turn.SaveErr != nil {
		return turn.Stats, turn.SaveErr
	}
	fmt.Fprintf(errOut, "saved session %s (%d tokens)\n", c.Name(), conv.Tokens())
	return turn.Stats, err
}

// newConversation starts a conversation on l with the flags' settings,
// the controllers of cs (none when nil) and the prefix cache.
func newConversation(g *genFlags, l *chatopen.Loaded, cs *controllerSet, system string, ignoreEOS bool) (*conversation.Conversation, error) {
	var ctl conversation.Controller // nil, not a nil *Host, without controllers
	if cs != nil {
		ctl = cs.Host
	}
	return l.Chat(chatopen.ChatOptions{Context: g.context, Sampler: g.sampling, MaxTokens: g.maxTokens, System: system,
		Controller: ctl, Prefixes: g.cfg.Prefixes(), IgnoreEOS: ignoreEOS})
}

// chatRun is one `run --chat`: a new conversation of one turn, saved
// nowhere, starting from the prefix cache.
type chatRun struct {
	g              *genFlags
	l              *chatopen.Loaded
	cs             *controllerSet
	prompt, system string
	ignoreEOS      bool
	think          *bool
}

// runChat replies to the prompt in the model's chat template, through p.
func runChat(ctx context.Context, r chatRun, p *printer, errOut io.Writer) (engine.Stats, error) {
	if err := r.l.CanChat(); err != nil {
		return engine.Stats{}, err
	}
	conv, err := newConversation(r.g, r.l, r.cs, r.system, r.ignoreEOS)
	if err != nil {
		return engine.Stats{}, err
	}
	defer conv.Close()
	if r.think != nil {
		conv.SetThinking(r.think)
	}
	reply, err := conv.Send(ctx, r.prompt, func(u conversation.Update) error { return p.event(u.Event) })
	p.flush()
	if reply.PrefixErr != nil {
		fmt.Fprintf(errOut, "note: %v\n", reply.PrefixErr)
	}
	return reply.Stats, err
}

// reportOpen says on errOut what restoring the session did.
func reportOpen(rep chatsession.Report, errOut io.Writer) {
	switch {
	case rep.New:
		fmt.Fprintf(errOut, "new session %s\n", rep.Name)
		return
	case rep.Fallback != nil:
		fmt.Fprintf(errOut, "%v\nre-processing the transcript instead (slower, nothing is lost)\n", rep.Fallback)
	default:
		converted := ""
		if rep.Converted != "" {
			converted = " (" + rep.Converted + ")"
		}
		fmt.Fprintf(errOut, "restored %d tokens in %s%s\n", rep.Tokens, rep.Took.Round(time.Microsecond), converted)
	}
	switch {
	case rep.ControllerErr != nil:
		fmt.Fprintf(errOut, "the session's controller %s is not available (%v); this reply runs without it, and the session keeps it and its state for when it is back (or give --controller)\n", rep.Controller, rep.ControllerErr)
	case rep.ControllerChanged:
		fmt.Fprintf(errOut, "note: controller %s changed since the session was saved\n", rep.Controller)
	}
}
