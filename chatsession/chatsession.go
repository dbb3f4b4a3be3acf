// Package chatsession owns a chat's life as a saved session: which
// session it saves under and this process's claim on it, restoring it (its
// model state when it was made with this model, else its transcript, and
// its controller), saving after every reply, and releasing the claim at
// the end. The chat (tui) and `run` call it and keep no session rules of
// their own; conversation holds the chat itself, sessions the files.
//
// # What is saved when
//
// A chat is saved after every reply (also one stopped part way), when it
// changes session (/load, /new) and when it closes; a front-end closes it
// on quit, SIGTERM and SIGHUP. A process killed outright (kill -9, a
// crash) loses at most the reply being generated and any setting changed
// since the last reply.
package chatsession

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/driftwoodlabs/driftwood/conversation"
	"github.com/driftwoodlabs/driftwood/sessions"
)

// Options says where a chat's sessions live and how to take one.
type Options struct {
	Store sessions.Store
	// Patience is how long Open waits for a session another process
	// holds (0: it refuses at once); Waiting, when set, is told once
	// that it waits.
	Patience time.Duration
	Waiting  func(*sessions.BusyError)
	// KeepController leaves the conversation's controller as it is when
	// a session is restored (the user chose one), instead of turning the
	// session's back on.
	KeepController bool
}

// Chat is a conversation bound to the session it saves under. Its
// methods that run the conversation (Send, Regenerate, Open, Load,
// Clear, Close) are not safe for concurrent use; Name may be called at
// any time.
type Chat struct {
	conv *conversation.Conversation
	opt  Options

	mu sync.Mutex
	// name is the session ("" until the chat is first saved), claim the
	// hold on it; saved is the conversation's change count and
	// controller when it was last saved or restored.
	name     string
	claim    *sessions.Claim
	saved    uint64
	savedCtl string
	// written says the session's file exists (saved or restored);
	// madeUp that the chat named it after the time itself.
	written, madeUp bool
}

// New binds conv to a session not yet named: the first save names it
// after the time.
func New(conv *conversation.Conversation, opt Options) *Chat {
	c := &Chat{conv: conv, opt: opt}
	c.markSaved()
	return c
}

// Conversation is the chat's conversation.
func (c *Chat) Conversation() *conversation.Conversation { return c.conv }

// Name is the session the chat saves under ("" before its first save).
func (c *Chat) Name() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.name
}

// Report says what opening or loading a session did.
type Report struct {
	Name string
	// New says there was no session of that name: the chat starts it.
	New bool
	// Tokens is how many positions the model holds afterwards, restored
	// in Took.
	Tokens int
	Took   time.Duration
	// Fallback says why the model state could not be restored: the
	// transcript was taken and the next reply processes it again.
	Fallback error
	// Converted, when set, says the model state was stored in another KV
	// type than the cache keeps and was converted as it was restored
	// ("its f32 KV state converted to f16").
	Converted string
	// Controller is the session's controller ("" when it had none, or
	// when KeepController kept the conversation's); ControllerOn says it
	// runs again, ControllerChanged that its module changed since the
	// save, ControllerErr why it could not be turned on (the session
	// keeps it and its state until another replaces it).
	Controller        string
	ControllerOn      bool
	ControllerChanged bool
	ControllerErr     error
}

// Open binds conv to session name: it claims the name (waiting up to
// opt.Patience for another process to let go), and restores the session
// when it exists. A name with no session yet starts one (Report.New).
func Open(conv *conversation.Conversation, opt Options, name string) (*Chat, Report, error) {
	c := &Chat{conv: conv, opt: opt}
	rep, err := c.open(name)
	if err != nil {
		return nil, rep, err
	}
	return c, rep, nil
}

// open claims name and restores it into the conversation; on error the
// chat and its conversation are as they were.
func (c *Chat) open(name string) (Report, error) {
	claim, err := c.claimFor(name, c.opt.Patience)
	if err != nil {
		return Report{Name: name}, err
	}
	rep := Report{Name: name}
	if !claim.Exists() {
		rep.New = true
		c.take(name, claim, false)
		return rep, nil
	}
	if err := c.restore(claim, &rep); err != nil {
		c.drop(claim)
		return rep, err
	}
	c.take(name, claim, true)
	return rep, nil
}

// restore reads the claimed session into the conversation.
func (c *Chat) restore(claim *sessions.Claim, rep *Report) error {
	start := time.Now()
	snap, err := claim.Open()
	if err != nil {
		return err
	}
	defer snap.Close()
	if err := c.conv.Restore(snap); err != nil {
		if err := c.conv.RestoreTranscript(snap.Meta); err != nil {
			return err
		}
		rep.Fallback = err
	}
	rep.Took, rep.Tokens = time.Since(start), c.conv.Tokens()
	if to := c.conv.KVType(); rep.Fallback == nil && to != "" && snap.KV.Type() != to {
		rep.Converted = fmt.Sprintf("its %s KV state converted to %s", snap.KV.Describe(), to)
	}
	ctl := c.conv.Controller()
	switch {
	case ctl == nil || c.opt.KeepController:
	case snap.Meta.Controller == nil:
		ctl.Off()
	default:
		res := c.conv.ResumeController()
		rep.Controller, rep.ControllerOn, rep.ControllerChanged, rep.ControllerErr = res.Name, res.On, res.Changed, res.Err
	}
	return nil
}

// Turn is a reply and the save after it.
type Turn struct {
	conversation.Reply
	// Saved is the session saved after the reply ("" when nothing was:
	// the conversation did not change, or SaveErr).
	Saved   string
	SaveErr error
}

// Send sends a user message and generates the reply
// (conversation.Send), then saves the chat, also when the reply was cut
// short: what it produced is kept.
func (c *Chat) Send(ctx context.Context, text string, emit func(conversation.Update) error) (Turn, error) {
	reply, err := c.conv.Send(ctx, text, emit)
	return c.afterReply(reply, err)
}

// Regenerate replaces the last reply with a new one
// (conversation.Regenerate), then saves the chat.
func (c *Chat) Regenerate(ctx context.Context, emit func(conversation.Update) error) (Turn, error) {
	reply, err := c.conv.Regenerate(ctx, emit)
	return c.afterReply(reply, err)
}

func (c *Chat) afterReply(reply conversation.Reply, err error) (Turn, error) {
	t := Turn{Reply: reply}
	t.Saved, t.SaveErr = c.Save()
	return t, err
}

// Changed reports whether the chat holds something its session does not:
// a turn or a setting changed, or another controller, since it was last
// saved or restored. A chat with no turns is never worth a save.
func (c *Chat) Changed() bool {
	if !c.hasTurns() {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.conv.Changes() != c.saved || c.controllerKey() != c.savedCtl
}

// hasTurns reports whether the conversation has a message besides the
// system prompt.
func (c *Chat) hasTurns() bool {
	for _, m := range c.conv.Messages() {
		if m.Role != "system" {
			return true
		}
	}
	return false
}

// controllerKey names the controller running now, to tell a switch.
func (c *Chat) controllerKey() string {
	ctl := c.conv.Controller()
	if ctl == nil {
		return ""
	}
	run, ok := ctl.Running()
	if !ok {
		return ""
	}
	return run.Name + "\x00" + run.Path + "\x00" + run.Arg + "\x00" + run.SHA256
}

// markSaved records that the session holds the conversation as it is.
func (c *Chat) markSaved() {
	c.saved, c.savedCtl = c.conv.Changes(), c.controllerKey()
}

// Save writes the chat to its session when it changed, naming a new
// chat after the time; it returns the session written ("" when nothing
// changed).
func (c *Chat) Save() (string, error) {
	if !c.Changed() {
		return "", nil
	}
	c.mu.Lock()
	name, claim := c.name, c.claim
	c.mu.Unlock()
	madeUp := false
	if name == "" {
		var err error
		if name, claim, err = c.claimNew(); err != nil {
			return "", err
		}
		madeUp = true
	}
	if err := c.conv.Save(claim); err != nil {
		c.drop(claim)
		return "", err
	}
	c.take(name, claim, true)
	if madeUp {
		c.mu.Lock()
		c.madeUp = true
		c.mu.Unlock()
	}
	return name, nil
}

// claimNew claims a new session named after the time (with a suffix when
// another session has that name already).
func (c *Chat) claimNew() (string, *sessions.Claim, error) {
	base := "chat-" + time.Now().Format("20060102-150405")
	name := base
	for i := 2; ; i++ {
		if !c.opt.Store.Exists(name) {
			claim, err := c.opt.Store.Claim(name)
			var busy *sessions.BusyError
			if err == nil && !claim.Exists() {
				return name, claim, nil
			}
			if err == nil {
				claim.Release() // saved by another process meanwhile
			} else if !errors.As(err, &busy) {
				return "", nil, err
			}
		}
		name = fmt.Sprintf("%s-%d", base, i)
	}
}

// SaveAs saves the chat as session name, which becomes its session; a
// session the chat had named after the time itself is renamed, not
// copied. It refuses a name that another conversation's session has.
func (c *Chat) SaveAs(name string) error {
	claim, err := c.claimFor(name, 0)
	if err != nil {
		return err
	}
	if claim != c.claim && claim.Exists() {
		claim.Release()
		return fmt.Errorf("session %q already exists: /load it, or save under another name", name)
	}
	if err := c.conv.Save(claim); err != nil {
		c.drop(claim)
		return err
	}
	c.mu.Lock()
	old, madeUp := c.claim, c.madeUp && c.claim != claim
	c.mu.Unlock()
	if madeUp {
		old.Remove() // the made-up name goes; the release below lets go of it
	}
	c.take(name, claim, true)
	return nil
}

// Load saves the chat when it changed, then restores session name in
// its place (Open). On error the chat is as it was (saved).
func (c *Chat) Load(name string) (saved string, rep Report, err error) {
	if saved, err = c.Save(); err != nil {
		return "", Report{Name: name}, err
	}
	rep, err = c.open(name)
	return saved, rep, err
}

// Clear saves the chat when it changed, then starts a new, unnamed one
// (keeping the system prompt, the sampling and the controller).
func (c *Chat) Clear() (saved string, err error) {
	if saved, err = c.Save(); err != nil {
		return "", err
	}
	c.conv.Clear()
	c.take("", nil, false)
	return saved, nil
}

// Closed says what Close did.
type Closed struct {
	// Name is the chat's session ("" when it was never saved); Wrote says
	// that Close saved changes to it.
	Name  string
	Wrote bool
}

// Close saves the chat when it changed and releases its session. The
// conversation is the caller's to close.
func (c *Chat) Close() (Closed, error) {
	saved, err := c.Save()
	c.mu.Lock()
	res := Closed{Wrote: saved != ""}
	if c.written {
		res.Name = c.name
	}
	c.mu.Unlock()
	c.take("", nil, false)
	return res, err
}

// claimFor returns the claim on session name: the chat's own when it is
// that session, else a new one.
func (c *Chat) claimFor(name string, patience time.Duration) (*sessions.Claim, error) {
	c.mu.Lock()
	own := c.claim
	c.mu.Unlock()
	if own != nil && own.Name() == name {
		return own, nil
	}
	if patience > 0 {
		return c.opt.Store.ClaimWait(context.Background(), name, patience, c.opt.Waiting)
	}
	return c.opt.Store.Claim(name)
}

// take makes claim, on session name, the chat's (releasing the one it
// had), as just saved or restored; written says the session's file
// exists.
func (c *Chat) take(name string, claim *sessions.Claim, written bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if claim != c.claim {
		c.claim.Release()
		c.claim, c.madeUp = claim, false
	}
	c.name, c.written = name, written
	c.markSaved()
}

// drop releases claim unless it is the chat's.
func (c *Chat) drop(claim *sessions.Claim) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if claim != c.claim {
		claim.Release()
	}
}
