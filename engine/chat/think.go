package chat

import (
	"strings"

	"github.com/driftwoodlabs/driftwood/engine/tokenizer"
)

// The tags around a reasoning model's thinking (Qwen3, DeepSeek-R1, QwQ).
const (
	ThinkOpen  = "<think>"
	ThinkClose = "</think>"
)

// Thought is a reply split at its think block.
type Thought struct {
	// Thinking is the text inside the block without the newlines around
	// it; Answer is the rest of the reply, without the newlines that
	// follow the block.
	Thinking, Answer string
	// Block says the reply has a think block (Thinking may still be
	// empty: Qwen3 writes an empty one when asked not to think); Open
	// that the block has not ended yet.
	Block, Open bool
}

// SplitThinking splits a reply at its think block as Qwen3's chat
// template does when it reads a reply back: everything before the first
// </think> is the thinking (after a <think> that opens it, if any), the
// rest the answer. A reply that starts with <think> but has no </think>
// yet is still thinking.
//
// With streaming set, text is a reply still being generated, so a tag
// may have arrived only in part ("<thi", "</th"): such a tail is held
// back, so that no piece of a tag is ever shown. What is shown only
// grows as the reply does, except when a </think> comes with no <think>
// before it (a template that opens the block in the prompt): then the
// text shown so far as the answer turns out to be the thinking.
func SplitThinking(text string, streaming bool) Thought {
	if i := strings.Index(text, ThinkClose); i >= 0 {
		think := strings.TrimLeft(text[:i], " \t\n")
		think = strings.TrimPrefix(think, ThinkOpen)
		return Thought{Thinking: strings.Trim(think, "\n"), Answer: strings.TrimLeft(text[i+len(ThinkClose):], "\n"), Block: true}
	}
	lead := strings.TrimLeft(text, " \t\n")
	if rest, ok := strings.CutPrefix(lead, ThinkOpen); ok {
		if streaming {
			rest = rest[:len(rest)-partialTag(rest, ThinkClose)]
		}
		return Thought{Thinking: strings.Trim(rest, "\n"), Block: true, Open: true}
	}
	if streaming {
		if lead == "" || strings.HasPrefix(ThinkOpen, lead) {
			// Nothing yet, or the start of a <think>.
			return Thought{}
		}
		text = text[:len(text)-partialTag(text, ThinkClose)]
	}
	return Thought{Answer: text}
}

// partialTag is the length of the longest proper prefix of tag that text
// ends with.
func partialTag(text, tag string) int {
	for n := min(len(tag)-1, len(text)); n > 0; n-- {
		if strings.HasSuffix(text, tag[:n]) {
			return n
		}
	}
	return 0
}

// SwitchesThinking reports whether the template reads the variable
// enable_thinking (Options.EnableThinking), as Qwen3's does: for other
// templates that option changes nothing. It looks for the name in the
// template's source.
func (t *Template) SwitchesThinking() bool {
	return strings.Contains(t.source, "enable_thinking")
}

// EndOfTurn is the special token the template ends an assistant turn
// with (<|im_end|> for ChatML, <|eot_id|> for Llama 3), found by
// rendering a short exchange; ok is false when the template puts no
// special token of tok right after the reply. A reply must stop there
// even when the model's eos_token is another one, as in the base models
// that ship a chat template.
func (t *Template) EndOfTurn(tok *tokenizer.Tokenizer) (id int32, ok bool) {
	const probe = "driftwood-probe"
	msgs := []Message{{Role: "user", Content: "Hi"}, {Role: "assistant", Content: probe}}
	parts, err := t.RenderParts(msgs, Options{}, specialTexts(tok))
	if err != nil {
		return 0, false
	}
	for i, p := range parts[:max(len(parts)-1, 0)] {
		if next := parts[i+1]; !p.Special && strings.HasSuffix(strings.TrimRight(p.Text, " \n"), probe) && next.Special {
			return tok.TokenID(next.Text)
		}
	}
	return 0, false
}

// ThinksByDefault reports whether the template, with enable_thinking
// unset, starts a reply as it does with enable_thinking true (Qwen3's
// does); it says something only for a template that SwitchesThinking.
func (t *Template) ThinksByDefault() bool {
	msgs := []Message{{Role: "user", Content: "Hi"}}
	on := true
	unset, err1 := t.Render(msgs, Options{AddGenerationPrompt: true})
	set, err2 := t.Render(msgs, Options{AddGenerationPrompt: true, EnableThinking: &on})
	return err1 == nil && err2 == nil && unset == set
}

// OpensThinking reports whether the template, with enable_thinking as
// given, ends the generation prompt inside an open think block (as
// DeepSeek-R1's and Qwen3's thinking-only models do): the reply then
// starts with the thinking and has only the </think>.
func (t *Template) OpensThinking(enable *bool) bool {
	out, err := t.Render([]Message{{Role: "user", Content: "Hi"}}, Options{AddGenerationPrompt: true, EnableThinking: enable})
	return err == nil && strings.HasSuffix(strings.TrimRight(out, " \n"), ThinkOpen)
}
