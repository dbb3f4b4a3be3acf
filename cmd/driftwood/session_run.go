package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/driftwoodlabs/driftwood/chatopen"
	"github.com/driftwoodlabs/driftwood/conversation"
	"github.com/driftwoodlabs/driftwood/sessions"
)

// sessionPatience is how long `run --session` waits for a session that
// another process holds.
const sessionPatience = 30 * time.Second

// sessionRun is one `run --session` / `run --continue`.
type sessionRun struct {
	g              *genFlags
	l              *chatopen.Loaded
	cs             *controllerSet // nil when the model has no tokenizer
	cf             controllerFlags
	store          sessions.Store
	name           string
	prompt, system string
	// think, when set, is the thinking switch from now on (else the
	// session's).
	think *bool
}

// runSession restores the session (or starts it), replies to the prompt
// and saves it, also when the reply was cut short by Ctrl-C.
func runSession(ctx context.Context, r sessionRun, out, errOut io.Writer) error {
	var ctl conversation.Controller // nil, not a nil *Host, without controllers
	if r.cs != nil {
		ctl = r.cs.Host
	}
	conv, err := r.l.Chat(chatopen.ChatOptions{Context: r.g.context, Sampler: r.g.sampling, MaxTokens: r.g.maxTokens, Controller: ctl, Prefixes: r.g.cfg.Prefixes()})
	if err != nil {
		return err
	}
	defer conv.Close()
	// Hold the session from before it is read until after it is saved,
	// so that a turn made meanwhile by another process is never lost.
	claim, err := r.store.ClaimWait(ctx, r.name, sessionPatience, func(b *sessions.BusyError) {
		fmt.Fprintf(errOut, "%v; waiting up to %s…\n", b, sessionPatience)
	})
	if err != nil {
		return err
	}
	defer claim.Release()
	if claim.Exists() {
		if err := restore(conv, claim, r, errOut); err != nil {
			return err
		}
	} else if r.system != "" {
		conv.SetSystem(r.system)
	}
	if r.think != nil {
		conv.SetThinking(r.think)
	}
	reply, err := conv.Send(ctx, r.prompt, func(u conversation.Update) error {
		_, werr := io.WriteString(out, u.Delta)
		return werr
	})
	fmt.Fprintln(out)
	if comp := reply.Compaction; comp != nil {
		fmt.Fprintf(errOut, "note: to make room, the oldest %d messages left the model's view (%d → %d tokens); the session keeps them\n", comp.Messages, comp.Before, comp.After)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	if err := conv.Save(claim); err != nil {
		return err
	}
	fmt.Fprintf(errOut, "%v · saved session %s (%d tokens)\n", reply.Stats, r.name, conv.Tokens())
	return nil
}

// restore loads the session into conv: the model state when the session
// was made with this model, else the transcript alone (re-processed by the
// next reply). The session's controller comes back unless the command
// line names one.
func restore(conv *conversation.Conversation, claim *sessions.Claim, r sessionRun, errOut io.Writer) error {
	start := time.Now()
	snap, err := claim.Open()
	if err != nil {
		return err
	}
	defer snap.Close()
	if err := conv.Restore(snap); err != nil {
		fmt.Fprintf(errOut, "%v\nre-processing the transcript instead (slower, nothing is lost)\n", err)
		if err := conv.RestoreTranscript(snap.Meta); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(errOut, "restored %d tokens in %s\n", conv.Tokens(), time.Since(start).Round(time.Microsecond))
	}
	if r.g.samplingSet() {
		if err := conv.SetSampler(r.g.sampling); err != nil {
			return err
		}
	}
	if r.cf.name == "" && r.cs != nil {
		switch res := conv.ResumeController(); {
		case res.Err != nil:
			fmt.Fprintf(errOut, "the session's controller %s is not available (%v); this reply runs without it, and the session keeps it and its state for when it is back (or give --controller)\n", res.Name, res.Err)
		case res.Changed:
			fmt.Fprintf(errOut, "note: controller %s changed since the session was saved\n", res.Name)
		}
	}
	return nil
}
