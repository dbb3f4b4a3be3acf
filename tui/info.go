package tui

import (
	"fmt"
	"strings"

	"github.com/driftwoodlabs/driftwood/chatopen"
	"github.com/driftwoodlabs/driftwood/chatsession"
	"github.com/driftwoodlabs/driftwood/conversation"
	"github.com/driftwoodlabs/driftwood/engine"
)

// chatState is what the chat works on: the model, the conversation bound
// to its session (chatsession keeps the session's rules), the controller
// host, and the figures the views show. The chat page owns it and frees
// it in close; its components share it.
type chatState struct {
	model *chatopen.Loaded
	chat  *chatsession.Chat
	conv  *conversation.Conversation
	host  *controllerHost
	// used mirrors the context positions held; stats are the last
	// reply's.
	used  int
	stats *engine.Stats
}

// close saves the chat to its session when it changed, releases the
// session, and frees the conversation, the controllers and the model.
func (s *chatState) close() (chatsession.Closed, error) {
	closed, err := s.chat.Close()
	s.conv.Close()
	s.host.close()
	s.model.Close()
	return closed, err
}

// systemPrompt is the conversation's system prompt ("" for none).
func (s *chatState) systemPrompt() string {
	if msgs := s.conv.Messages(); len(msgs) > 0 && msgs[0].Role == "system" {
		return msgs[0].Content
	}
	return ""
}

// opensThinking reports whether the next reply's prompt opens its think
// block (a template that writes <think> for the model).
func (s *chatState) opensThinking() bool {
	return s.model.Template.OpensThinking(s.conv.Thinking())
}

// showText describes the model, the settings and the controller (/show).
func (s *chatState) showText() string {
	sm := s.conv.Sampler()
	maxTokens := "until the model stops"
	if n := s.conv.MaxTokens(); n > 0 {
		maxTokens = thousands(n)
	}
	controller := "none"
	if mod, arg := s.host.Current(); mod != nil {
		controller = mod.Name
		if arg != "" {
			controller += " " + arg
		}
	}
	system := s.systemPrompt()
	if system == "" {
		system = "none"
	}
	session := s.chat.Name()
	if session == "" {
		session = "not saved yet"
	}
	seed := fmt.Sprintf("seed %d", sm.Seed)
	if sm.Seed == 0 {
		seed = "seed fresh each reply"
		if seeds := s.conv.ReplySeeds(); len(seeds) > 0 && seeds[len(seeds)-1] != 0 {
			seed += fmt.Sprintf(" (the last: %d)", seeds[len(seeds)-1])
		}
	}
	return strings.Join([]string{
		"model       " + s.model.Describe(),
		"backend     " + s.model.Backend.Name(),
		"context     " + thousands(s.used) + " of " + thousands(s.conv.Window()) + " tokens",
		"kv cache    " + s.kvCacheText(),
		fmt.Sprintf("sampling    temp %g · top_p %g · top_k %d · min_p %g · %s", sm.Temperature, sm.TopP, sm.TopK, sm.MinP, seed),
		"max_tokens  " + maxTokens,
		"thinking    " + s.thinkingState(),
		"controller  " + controller,
		"last reply  " + s.lastGoverned(),
		"system      " + system,
		"session     " + session,
	}, "\n")
}

// lastGoverned says which controllers governed the last reply.
func (s *chatState) lastGoverned() string {
	all := s.conv.ReplyControls()
	switch {
	case len(all) == 0:
		return "none yet"
	case all[len(all)-1] == nil:
		return "under no controller"
	}
	return governedBy(all[len(all)-1])
}

// statsText describes the last reply's speed and size (/stats).
func (s *chatState) statsText() string {
	load := "model loaded in " + formatMillis(s.model.LoadTime)
	if s.stats == nil {
		return "no reply yet · " + load
	}
	st := s.stats
	return strings.Join([]string{
		fmt.Sprintf("prompt  %s tokens at %.1f tok/s", thousands(st.PromptTokens), st.PromptRate()),
		fmt.Sprintf("reply   %s tokens at %.1f tok/s (stop: %s)", thousands(st.GenTokens), st.GenRate(), st.Reason),
		fmt.Sprintf("context %s of %s tokens · %s", thousands(s.used), thousands(s.conv.Window()), load),
	}, "\n")
}

// thinkingState says whether the model thinks before it answers: the
// switch, or the template's default.
func (s *chatState) thinkingState() string {
	switch th := s.conv.Thinking(); {
	case !s.conv.SwitchesThinking():
		return "not switchable (the chat template has no enable_thinking)"
	case th != nil && *th:
		return "on"
	case th != nil:
		return "off"
	case s.model.Template.ThinksByDefault():
		return "on (the model's default)"
	}
	return "off (the model's default)"
}

// kvCacheText names the KV cache's type and the memory it takes.
func (s *chatState) kvCacheText() string {
	t := engine.KVTypeOf(s.model.Backend)
	if t == "" {
		return "the backend's own"
	}
	c := s.model.Weights.Config
	per := t.BytesPerToken(c.NumHiddenLayers, c.NumKeyValueHeads*c.HeadDim)
	return fmt.Sprintf("%s · %.4g KiB per token · %.1f MiB held", t, float64(per)/1024, float64(per*s.used)/(1<<20))
}
