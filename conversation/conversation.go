// Package conversation holds one chat with one model: the transcript, the
// model's state (tokens and KV cache, reused from turn to turn),
// sampling, the controller, and saving and restoring it as a session.
// It does not open models (chatopen does) and knows its controllers only
// through the small Controller interface, not the Wasm host. The CLI and
// the TUI both drive it.
package conversation

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/chat"
	"github.com/driftwoodlabs/driftwood/engine/tokenizer"
	"github.com/driftwoodlabs/driftwood/sessions"
)

// Runtime is what a conversation runs on: a loaded model's parts
// (chatopen.Loaded.Chat assembles it).
type Runtime struct {
	// Label names the model in saved sessions: its name and shape;
	// Source says what opens it again.
	Label    string
	Source   sessions.ModelSource
	Weights  *engine.Model
	Tok      *tokenizer.Tokenizer
	Template *chat.Template
	Backend  engine.Backend
	// Generator returns a decode loop with the sampling, the bound on a
	// reply's length and the model's stop tokens.
	Generator func(s engine.SamplerConfig, maxTokens int) *engine.Generator
	// Rebuild, when set, computes the KV state of tokens on another
	// backend, for a save when Backend cannot export its own (a model
	// split across ranks that lost one): so that what the user typed,
	// and the reply so far, are saved all the same.
	Rebuild func(tokens []int32, window int) (*engine.KVState, error)
}

// Options configures a conversation.
type Options struct {
	// Window is the context window in tokens.
	Window    int
	Sampler   engine.SamplerConfig
	MaxTokens int
	// Controller, when not nil, sees every step of every reply.
	Controller Controller
	// Prefixes, when not nil, is the prefix cache: a new conversation's
	// first reply starts from its cached system prompt and headers, and
	// keeps them there when they were not.
	Prefixes *sessions.Prefixes
	// IgnoreEOS keeps replies going past the model's end-of-turn tokens,
	// up to MaxTokens (a test of speed, not a chat).
	IgnoreEOS bool
}

// Controller is what a conversation needs of its controllers
// (controllers.Host is one): the decode loop's hook, and what a session
// records of them.
type Controller interface {
	engine.Hook
	// Running is the controller that runs now (without its store); ok is
	// false when none runs.
	Running() (c sessions.Controller, ok bool)
	// ReplyControls are the controllers that governed the last reply,
	// stretch by stretch.
	ReplyControls() []sessions.ReplyControl
	// Store is a copy of the key-value store; RestoreStore replaces it.
	Store() map[string][]byte
	RestoreStore(map[string][]byte) error
	// Resume turns on the controller c names (by name, else by path) and
	// returns the hash of the module now running.
	Resume(c sessions.Controller) (sha256 string, err error)
	// Off stops the controller.
	Off()
}

// Conversation is one chat. It is not safe for concurrent use, except
// that the controller may be switched while a reply runs.
type Conversation struct {
	rt       Runtime
	opt      Options
	seq      *engine.Sequence
	messages []chat.Message
	seeds    []uint64 // the sampler seed of each assistant message, in order
	// controls are the controllers that governed each assistant message,
	// in order (nil where none did, or where it is not known).
	controls [][]sessions.ReplyControl
	// replyIDs are the token ids each assistant message was generated
	// as, in order (nil where not known): the prompt holds them rather
	// than its text encoded again (chat.Template.EncodeReplies).
	replyIDs [][]int32
	dropped  int // messages out of the model's view (OutOfView)
	// imported are the tokens of an imported model state (Imported) that
	// the first message after the system message stands for; nil when
	// there are none or that message is out of view.
	imported []int32
	thinking *bool // enable_thinking for the template; nil: its default
	created  time.Time
	// changes counts the changes a session records (Changes).
	changes uint64
	// kept is the restored session's controller while it cannot be
	// turned on: saved back unchanged, store and all, as long as no other
	// controller runs, so that resuming the session later with the
	// controller available loses nothing.
	kept *sessions.Controller
}

// Update is one change to the reply being generated.
type Update struct {
	Event engine.Event
	// Delta is the text the event appended (empty for a backtrack or a
	// token that ends inside a UTF-8 sequence).
	Delta string
	// Text is the whole reply so far.
	Text string
	// Wanted is the text of the model's top token when the controller
	// overrode it (Event.Overrode).
	Wanted string
}

// Reply is a finished reply.
type Reply struct {
	Text  string
	Stats engine.Stats
	// Compaction, when not nil, says which turns left the model's view
	// to make room for this one.
	Compaction *Compaction
	// Prefix is how many prompt positions came from the prefix cache;
	// PrefixErr says why an entry could not be used or kept (the reply
	// is unaffected).
	Prefix    int
	PrefixErr error
}

// New starts an empty conversation.
func New(rt Runtime, opt Options) (*Conversation, error) {
	if rt.Tok == nil || rt.Template == nil {
		return nil, fmt.Errorf("model %s has no tokenizer.json or no chat template, so it cannot chat", rt.Weights.Dir)
	}
	c := &Conversation{rt: rt, opt: opt, created: time.Now().UTC()}
	if err := c.reset(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Conversation) reset() error {
	cache, err := c.rt.Backend.NewCache(c.opt.Window)
	if err != nil {
		return err
	}
	c.seq = &engine.Sequence{Cache: cache}
	return nil
}

// Close frees the conversation's KV cache (on MLX, device memory); the
// conversation is not used after it.
func (c *Conversation) Close() { c.seq.Cache.Close() }

// Messages is the transcript (the system message first, if any).
func (c *Conversation) Messages() []chat.Message { return c.messages }

// ReplyControls are the controllers that governed each assistant
// message, in order, stretch by stretch (nil where none did, or where it
// is not known).
func (c *Conversation) ReplyControls() [][]sessions.ReplyControl {
	out := make([][]sessions.ReplyControl, c.replies())
	copy(out, c.controls)
	return out
}

// ReplySeeds are the sampler seeds of the assistant messages, in order (0
// where not known): with the same settings and the transcript before it,
// a reply's seed reproduces it.
func (c *Conversation) ReplySeeds() []uint64 {
	seeds := make([]uint64, c.replies())
	copy(seeds, c.seeds)
	return seeds
}

// replies counts the assistant messages.
func (c *Conversation) replies() int {
	n := 0
	for _, m := range c.messages {
		if m.Role == "assistant" {
			n++
		}
	}
	return n
}

// Changes counts the changes to what a session of the conversation
// records (the transcript, the model's state, the system prompt, the
// sampling, the thinking switch; not the controller, which the caller
// switches): equal counts mean nothing to save.
func (c *Conversation) Changes() uint64 { return c.changes }

// Tokens is the number of positions the model holds.
func (c *Conversation) Tokens() int { return c.seq.Cache.Len() }

// KVType is the type the backend keeps the conversation's KV cache in
// ("" when it does not say).
func (c *Conversation) KVType() engine.KVType { return engine.KVTypeOf(c.rt.Backend) }

// Window is the context window.
func (c *Conversation) Window() int { return c.opt.Window }

// Sampler returns the sampling settings; SetSampler changes them for the
// next reply.
func (c *Conversation) Sampler() engine.SamplerConfig { return c.opt.Sampler }

// SetSampler sets the sampling for the next reply.
func (c *Conversation) SetSampler(s engine.SamplerConfig) error {
	if err := s.Validate(); err != nil {
		return err
	}
	c.opt.Sampler = s
	c.changes++
	return nil
}

// SetMaxTokens bounds the next replies (0: no bound).
func (c *Conversation) SetMaxTokens(n int) { c.opt.MaxTokens = n }

// MaxTokens is the bound on a reply's length.
func (c *Conversation) MaxTokens() int { return c.opt.MaxTokens }

// Controller is the conversation's controllers, or nil.
func (c *Conversation) Controller() Controller { return c.opt.Controller }

// SetSystem sets (or, with "", removes) the system prompt.
func (c *Conversation) SetSystem(text string) {
	if len(c.messages) > 0 && c.messages[0].Role == "system" {
		c.messages = c.messages[1:]
	}
	if text != "" {
		c.messages = append([]chat.Message{{Role: "system", Content: text}}, c.messages...)
	}
	c.changes++
}

// Clear starts over, keeping the system prompt, the sampling and the
// controller.
func (c *Conversation) Clear() {
	if len(c.messages) > 0 && c.messages[0].Role == "system" {
		c.messages = c.messages[:1]
	} else {
		c.messages = nil
	}
	c.seeds, c.controls, c.replyIDs, c.dropped, c.imported = nil, nil, nil, 0, nil
	c.created = time.Now().UTC()
	c.kept = nil
	c.truncate(0)
	c.changes++
}

func (c *Conversation) truncate(n int) {
	c.seq.Tokens = c.seq.Tokens[:n]
	c.seq.Cache.Truncate(n)
}

// TooLongError says that a message was refused because it does not fit
// the context window even when the model sees nothing else of the
// conversation but the system prompt. The conversation is as it was
// before.
type TooLongError struct {
	// Tokens is the length of the prompt with the message and the system
	// prompt only; Held is how many positions the conversation held
	// before it.
	Tokens, Held, Window int
}

func (e *TooLongError) Error() string {
	return fmt.Sprintf("the message does not fit: with only it and the system prompt in view the prompt is %d tokens, and the context window holds %d", e.Tokens, e.Window)
}

// Send adds a user message and generates the reply, streaming it to
// emit. When the message would not leave room for a reply (a quarter of
// the window, or max_tokens if less), the oldest turns leave the model's
// view first, down to half the window (Reply.Compaction says so). On
// cancellation (ctx) or error the partial reply is kept in the
// transcript and returned with the error, except that a message that
// does not fit the context window on its own (*TooLongError), or that
// the chat template refuses, is not added at all.
func (c *Conversation) Send(ctx context.Context, text string, emit func(Update) error) (Reply, error) {
	return c.generate(ctx, append(slices.Clip(c.messages), chat.Message{Role: "user", Content: text}), emit)
}

// Regenerate replaces the last reply with a new one, reusing the KV cache
// up to the previous turn.
func (c *Conversation) Regenerate(ctx context.Context, emit func(Update) error) (Reply, error) {
	n := len(c.messages)
	if n == 0 || c.messages[n-1].Role != "assistant" {
		return Reply{}, errors.New("there is no reply to regenerate")
	}
	return c.generate(ctx, c.messages[:n-1:n-1], emit)
}

// generate makes msgs the transcript and replies to it, unless the
// prompt cannot be built or leaves no room for a reply: then nothing
// changes.
func (c *Conversation) generate(ctx context.Context, msgs []chat.Message, emit func(Update) error) (Reply, error) {
	dropped := c.dropped
	ids, err := c.encode(msgs, dropped, true)
	if err != nil {
		return Reply{}, err
	}
	w := c.seq.Cache.Window()
	var comp *Compaction
	if len(ids)+c.replyRoom() > w {
		// Make room: the oldest turns leave the view, down to half the
		// window, so that the next turns fit without another compaction.
		fewer, kept, err := c.fit(msgs, dropped, ids, w/2, true)
		if err != nil {
			return Reply{}, err
		}
		if fewer > dropped {
			comp = &Compaction{Messages: fewer - dropped, Before: len(ids), After: len(kept)}
			dropped, ids = fewer, kept
		}
	}
	if len(ids) >= w {
		return Reply{}, &TooLongError{Tokens: len(ids), Held: c.Tokens(), Window: w}
	}
	c.messages, c.dropped = msgs, dropped
	c.changes++
	if comp != nil {
		comp.Shifted = c.realign(ids)
	}
	var prefix []int32
	restored := 0
	var prefixErr error
	if c.opt.Prefixes != nil && c.seq.Cache.Len() == 0 {
		if prefix, prefixErr = c.rt.Template.SharedPrefix(c.rt.Tok, msgs[:systemLen(msgs)], c.renderOptions()); prefixErr == nil {
			restored, prefixErr = c.opt.Prefixes.Restore(c.seq, c.rt.Weights, c.rt.Tok.Fingerprint(), prefix, ids)
		}
	}
	// Reuse the cache for the longest common prefix; at least the last
	// prompt token is run again to get fresh logits.
	p := min(commonPrefix(ids, c.seq.Tokens), len(ids)-1)
	c.truncate(p)

	gen := c.rt.Generator(c.opt.Sampler, c.opt.MaxTokens)
	if c.opt.IgnoreEOS {
		gen.StopTokens = nil
	}
	if c.opt.Controller != nil {
		gen.Hook = c.opt.Controller
	}
	stream := c.rt.Tok.NewStreamDecoder()
	var reply []int32
	text := ""
	st, err := gen.Generate(ctx, c.seq, ids[p:], func(e engine.Event) error {
		u := Update{Event: e}
		if e.Backtrack > 0 {
			reply = reply[:len(reply)-e.Backtrack]
			stream.Reset()
			text = c.rt.Tok.Decode(reply)
		}
		if e.Token >= 0 {
			reply = append(reply, e.Token)
			u.Delta = stream.Add(e.Token)
			text += u.Delta
		}
		if e.Overrode {
			u.Wanted = c.rt.Tok.Decode([]int32{e.Wanted})
		}
		u.Text = text
		return emit(u)
	})
	text += stream.Flush()
	replies := c.replies()
	c.seeds = append(c.seeds[:min(replies, len(c.seeds))], st.Seed)
	c.controls = append(c.controls[:min(replies, len(c.controls))], c.governed())
	c.replyIDs = append(c.replyIDs[:min(replies, len(c.replyIDs))], slices.Clip(reply))
	c.messages = append(c.messages, chat.Message{Role: "assistant", Content: text})
	if prefix != nil && restored == 0 {
		if err := c.opt.Prefixes.Keep(c.seq, c.rt.Weights, c.rt.Tok.Fingerprint(), prefix); prefixErr == nil {
			prefixErr = err
		}
	}
	return Reply{Text: text, Stats: st, Compaction: comp, Prefix: restored, PrefixErr: prefixErr}, err
}
