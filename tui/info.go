package tui

import (
	"fmt"
	"strings"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/sessions"
)

// How far the wrapped lines of /help, /show and /sessions are indented:
// under the description, the value, the figures.
const (
	commandHang  = 26
	showHang     = 12
	sessionsHang = 23
)

// commandsText lists the slash commands (for /help and the help view); a
// long usage puts its description on the next line.
func commandsText() string {
	const width = commandHang - 2
	var lines []string
	for _, c := range commandSpecs() {
		usage := commandUsage(c)
		if len(usage) > width {
			lines = append(lines, usage, strings.Repeat(" ", commandHang)+c.help)
			continue
		}
		lines = append(lines, fmt.Sprintf("%-*s  %s", width, usage, c.help))
	}
	return strings.Join(lines, "\n")
}

// showText describes the model, the settings and the controller.
func (p *chatPage) showText() string {
	s := p.conv.Sampler()
	maxTokens := "until the model stops"
	if n := p.conv.MaxTokens(); n > 0 {
		maxTokens = thousands(n)
	}
	controller := "none"
	if mod, arg := p.host.Current(); mod != nil {
		controller = mod.Name
		if arg != "" {
			controller += " " + arg
		}
	}
	system := p.systemPrompt()
	if system == "" {
		system = "none"
	}
	session := p.chat.Name()
	if session == "" {
		session = "not saved yet"
	}
	seed := fmt.Sprintf("seed %d", s.Seed)
	if s.Seed == 0 {
		seed = "seed fresh each reply"
		if seeds := p.conv.ReplySeeds(); len(seeds) > 0 && seeds[len(seeds)-1] != 0 {
			seed += fmt.Sprintf(" (the last: %d)", seeds[len(seeds)-1])
		}
	}
	return strings.Join([]string{
		"model       " + p.model.Describe(),
		"backend     " + p.model.Backend.Name(),
		"context     " + thousands(p.used) + " of " + thousands(p.conv.Window()) + " tokens",
		"kv cache    " + p.kvCacheText(),
		fmt.Sprintf("sampling    temp %g · top_p %g · top_k %d · min_p %g · %s", s.Temperature, s.TopP, s.TopK, s.MinP, seed),
		"max_tokens  " + maxTokens,
		"thinking    " + p.thinkingState(),
		"controller  " + controller,
		"last reply  " + p.lastGoverned(),
		"system      " + system,
		"session     " + session,
	}, "\n")
}

// lastGoverned says which controllers governed the last reply.
func (p *chatPage) lastGoverned() string {
	all := p.conv.ReplyControls()
	switch {
	case len(all) == 0:
		return "none yet"
	case all[len(all)-1] == nil:
		return "under no controller"
	}
	return governedBy(all[len(all)-1])
}

// statsText describes the last reply's speed and size.
func (p *chatPage) statsText() string {
	load := "model loaded in " + formatMillis(p.model.LoadTime)
	if p.stats == nil {
		return "no reply yet · " + load
	}
	st := p.stats
	return strings.Join([]string{
		fmt.Sprintf("prompt  %s tokens at %.1f tok/s", thousands(st.PromptTokens), st.PromptRate()),
		fmt.Sprintf("reply   %s tokens at %.1f tok/s (stop: %s)", thousands(st.GenTokens), st.GenRate(), st.Reason),
		fmt.Sprintf("context %s of %s tokens · %s", thousands(p.used), thousands(p.conv.Window()), load),
	}, "\n")
}

// sessionsText lists the saved sessions.
func sessionsText(store sessions.Store) string {
	list, err := store.List()
	if err != nil {
		return err.Error()
	}
	if len(list) == 0 {
		return "no saved sessions in " + store.Dir
	}
	var b strings.Builder
	fmt.Fprintf(&b, "sessions in %s (/load NAME):", store.Dir)
	for _, s := range list {
		if s.Err != nil {
			fmt.Fprintf(&b, "\n  %-20s unreadable: %v", s.Name, s.Err)
			continue
		}
		fmt.Fprintf(&b, "\n  %-20s %9s %7s tokens  %s  %s", s.Name, plural(s.Turns, "turn"), thousands(s.Tokens), s.Updated.Local().Format("2006-01-02 15:04"), s.Model)
	}
	return b.String()
}

// thinkingState says whether the model thinks before it answers: the
// switch, or the template's default.
func (p *chatPage) thinkingState() string {
	switch th := p.conv.Thinking(); {
	case !p.conv.SwitchesThinking():
		return "not switchable (the chat template has no enable_thinking)"
	case th != nil && *th:
		return "on"
	case th != nil:
		return "off"
	case p.model.Template.ThinksByDefault():
		return "on (the model's default)"
	}
	return "off (the model's default)"
}

// kvCacheText names the KV cache's type and the memory it takes.
func (p *chatPage) kvCacheText() string {
	t := engine.KVTypeOf(p.model.Backend)
	if t == "" {
		return "the backend's own"
	}
	c := p.model.Weights.Config
	per := t.BytesPerToken(c.NumHiddenLayers, c.NumKeyValueHeads*c.HeadDim)
	return fmt.Sprintf("%s · %.4g KiB per token · %.1f MiB held", t, float64(per)/1024, float64(per*p.used)/(1<<20))
}
