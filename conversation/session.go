package conversation

import (
	"fmt"
	"slices"
	"time"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/chat"
	"github.com/driftwoodlabs/driftwood/sessions"
)

// Save writes the conversation as the claimed session.
func (c *Conversation) Save(claim *sessions.Claim) error {
	kv, err := c.seq.Cache.Export()
	if err != nil && c.rt.Rebuild != nil {
		var rerr error
		if kv, rerr = c.rt.Rebuild(c.seq.Tokens, c.seq.Cache.Window()); rerr != nil {
			return fmt.Errorf("%w; computing the state again for the save: %w", err, rerr)
		}
		err = nil
	}
	if err != nil {
		return err
	}
	meta := sessions.Meta{
		Created:              c.created,
		Updated:              time.Now().UTC(),
		Model:                c.rt.Label,
		ModelFingerprint:     c.rt.Weights.Fingerprint,
		ModelSource:          c.source(),
		TokenizerFingerprint: c.rt.Tok.Fingerprint(),
		Tokens:               c.seq.Tokens,
		Messages:             c.messages,
		ReplySeeds:           c.ReplySeeds(),
		ReplyControls:        c.savedControls(),
		ReplyTokens:          c.savedReplyIDs(),
		OutOfView:            c.dropped,
		Imported:             c.importedInView(),
		Sampler:              sessions.SamplingOf(c.opt.Sampler),
		EnableThinking:       c.thinking,
	}
	if d := c.opt.Controller; d != nil {
		if run, ok := d.Running(); ok {
			run.KV = d.Store()
			meta.Controller = &run
		} else {
			meta.Controller = c.kept
		}
	}
	return claim.Save(meta, kv)
}

// governed is what the controller says governed the reply just made: nil
// when no controller ran in it.
func (c *Conversation) governed() []sessions.ReplyControl {
	if c.opt.Controller == nil {
		return nil
	}
	rc := c.opt.Controller.ReplyControls()
	for _, s := range rc {
		if s.Name != "" || s.Fault != "" {
			return rc
		}
	}
	return nil
}

// savedReplyIDs are the replies' ids as a session stores them.
func (c *Conversation) savedReplyIDs() [][]int32 {
	out := make([][]int32, c.replies())
	copy(out, c.replyIDs)
	return out
}

// checkedReplyIDs are a session's reply ids that the conversation can
// use: each an id of the model's vocabulary, and decoding to its reply's
// text (else nil: that reply is encoded as text).
func (c *Conversation) checkedReplyIDs(meta sessions.Meta) [][]int32 {
	var replies []string
	for _, m := range meta.Messages {
		if m.Role == "assistant" {
			replies = append(replies, m.Content)
		}
	}
	vocab := int32(c.rt.Weights.Config.VocabSize)
	out := make([][]int32, min(len(meta.ReplyTokens), len(replies)))
	for i := range out {
		ids := meta.ReplyTokens[i]
		if !slices.ContainsFunc(ids, func(id int32) bool { return id < 0 || id >= vocab }) && c.rt.Tok.Decode(ids) == replies[i] {
			out[i] = ids
		}
	}
	return out
}

// savedControls is ReplyControls as a session stores it: nil when no
// reply had a controller.
func (c *Conversation) savedControls() [][]sessions.ReplyControl {
	all := c.ReplyControls()
	for _, rc := range all {
		if rc != nil {
			return all
		}
	}
	return nil
}

// source is the model's source for a session (nil when not known).
func (c *Conversation) source() *sessions.ModelSource {
	if c.rt.Source.IsZero() {
		return nil
	}
	src := c.rt.Source
	return &src
}

// ControllerResume says what became of a restored session's controller.
type ControllerResume struct {
	// Name is the session's controller ("" when it had none).
	Name string
	// On says it runs again; Changed that its module is not the one the
	// session was saved with (by hash).
	On, Changed bool
	// Err says why it could not be turned on. Its reference and its store
	// stay in the session until another controller replaces them.
	Err error
}

// ResumeController turns the restored session's controller back on,
// found by name, else by the path it was loaded from. When neither finds
// it, no controller runs and the session keeps it (see
// ControllerResume.Err).
func (c *Conversation) ResumeController() ControllerResume {
	saved, d := c.kept, c.opt.Controller
	if saved == nil || d == nil {
		return ControllerResume{}
	}
	r := ControllerResume{Name: saved.Name}
	sha, err := d.Resume(*saved)
	if err != nil {
		d.Off()
		r.Err = err
		return r
	}
	c.kept = nil
	r.On, r.Changed = true, sha != saved.SHA256
	return r
}

// Restore replaces the conversation with the snapshot: transcript,
// sampling, and the model's state, imported without re-processing the
// conversation. Everything is checked first (model, tokenizer, shapes);
// on any mismatch the conversation stays as it was and the error says
// what differs (RestoreTranscript can still take the text). The
// controller's key-value store is restored; which controller to run is
// the caller's choice (snap.Meta.Controller names it).
func (c *Conversation) Restore(snap *sessions.Snapshot) error {
	if err := snap.CheckModel(c.rt.Weights, c.rt.Tok.Fingerprint(), c.opt.Window); err != nil {
		return err
	}
	if err := c.restoreControllerKV(snap.Meta); err != nil {
		return err
	}
	if err := c.seq.Cache.Import(snap.KV); err != nil {
		c.truncate(0)
		return err
	}
	c.seq.Tokens = append(c.seq.Tokens[:0], snap.Meta.Tokens...)
	c.takeMeta(snap.Meta)
	return nil
}

// RestoreTranscript takes a snapshot's transcript and settings but not its
// model state: the next reply re-processes the conversation (slower, but
// works on any model).
func (c *Conversation) RestoreTranscript(meta sessions.Meta) error {
	if err := c.restoreControllerKV(meta); err != nil {
		return err
	}
	c.truncate(0)
	c.takeMeta(meta)
	return nil
}

func (c *Conversation) restoreControllerKV(meta sessions.Meta) error {
	if d := c.opt.Controller; d != nil && meta.Controller != nil {
		if err := d.RestoreStore(meta.Controller.KV); err != nil {
			return fmt.Errorf("session's controller state: %w", err)
		}
	}
	return nil
}

func (c *Conversation) takeMeta(meta sessions.Meta) {
	c.changes++
	c.imported = nil
	if n := meta.Imported; n > 0 && n <= len(meta.Tokens) && meta.OutOfView == 0 && meta.TokenizerFingerprint == c.rt.Tok.Fingerprint() {
		vocab := int32(c.rt.Weights.Config.VocabSize)
		if ids := meta.Tokens[:n]; !slices.ContainsFunc(ids, func(id int32) bool { return id < 0 || id >= vocab }) {
			c.imported = slices.Clone(ids)
		}
	}
	c.kept = meta.Controller
	c.messages = slices.Clone(meta.Messages)
	c.seeds = slices.Clone(meta.ReplySeeds)
	c.controls = slices.Clone(meta.ReplyControls)
	c.replyIDs = c.checkedReplyIDs(meta)
	c.dropped = meta.OutOfView
	c.thinking = meta.EnableThinking
	c.created = meta.Created
	if s := meta.Sampler.Config(); s.Validate() == nil {
		c.opt.Sampler = s
	}
}

// importedInView is how many imported tokens the model sees (0 when none
// were, or their message left the view).
func (c *Conversation) importedInView() int {
	if c.dropped > 0 {
		return 0
	}
	return len(c.imported)
}

// Imported is how many tokens at the start of the model's state were
// imported (sessions.Meta.Imported) and are still in its view.
func (c *Conversation) Imported() int { return c.importedInView() }

// ImportedSession is the header of a new session on rt's model whose
// model state, the tokens ids, comes from elsewhere: a prompt cache
// mlx-lm saved, its ids read back from its values. Its transcript is one
// user message holding the tokens' text, special tokens and all (what
// the messages were is not known); the model sees the tokens as they
// are, and the next message after them as afterImported says. created is
// when the state was made (the chat template's date, for templates that
// print it). Save it with the state, as it is.
func ImportedSession(rt Runtime, ids []int32, created time.Time, sampler engine.SamplerConfig) sessions.Meta {
	c := Conversation{rt: rt}
	return sessions.Meta{
		Created:              created.UTC(),
		Updated:              time.Now().UTC(),
		Model:                rt.Label,
		ModelFingerprint:     rt.Weights.Fingerprint,
		ModelSource:          c.source(),
		TokenizerFingerprint: rt.Tok.Fingerprint(),
		Tokens:               slices.Clone(ids),
		Messages:             []chat.Message{{Role: "user", Content: rt.Tok.Decode(ids)}},
		Imported:             len(ids),
		Sampler:              sessions.SamplingOf(sampler),
	}
}
