package chat

import (
	"strings"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine/tokenizer"
)

func TestSplitThinking(t *testing.T) {
	cases := []struct {
		reason    string
		text      string
		streaming bool
		want      Thought
	}{
		{"a Qwen3 reply: the newlines around the block go", "<think>\nLet me see.\n</think>\n\nHello.", false,
			Thought{Thinking: "Let me see.", Answer: "Hello.", Block: true}},
		{"no block: all answer", "Hello <b>there</b>.", false, Thought{Answer: "Hello <b>there</b>."}},
		{"an empty block (enable_thinking false, or /no_think)", "<think>\n\n</think>\n\nHi", false,
			Thought{Answer: "Hi", Block: true}},
		{"still thinking", "<think>\nHmm, so", true, Thought{Thinking: "Hmm, so", Block: true, Open: true}},
		{"a reply cut off while thinking is still thinking", "<think>\nHmm", false, Thought{Thinking: "Hmm", Block: true, Open: true}},
		{"a </think> arriving in part is held back", "<think>\nHmm</th", true, Thought{Thinking: "Hmm", Block: true, Open: true}},
		{"but shown in a finished reply", "<think>\nHmm</th", false, Thought{Thinking: "Hmm</th", Block: true, Open: true}},
		{"the start of a <think> shows nothing yet", "<th", true, Thought{}},
		{"unless the reply ended there", "<th", false, Thought{Answer: "<th"}},
		{"a < that cannot start <think> is the answer", "<b", true, Thought{Answer: "<b"}},
		{"leading blank lines before <think>", "\n<think>x</think>y", false, Thought{Thinking: "x", Answer: "y", Block: true}},
		{"a prompt that opened the block: </think> alone ends it", "reasoning\n</think>\n\nanswer", false,
			Thought{Thinking: "reasoning", Answer: "answer", Block: true}},
		{"the first </think> ends the block; later ones are the answer's", "<think>a</think>b</think>c", false,
			Thought{Thinking: "a", Answer: "b</think>c", Block: true}},
	}
	for _, c := range cases {
		if got := SplitThinking(c.text, c.streaming); got != c.want {
			t.Errorf("%s: SplitThinking(%q, %v) = %+v, want %+v", c.reason, c.text, c.streaming, got, c.want)
		}
	}
}

// TestSplitThinkingStreaming cuts a reply after every byte, which covers
// every way tokens can split <think> and </think>: what is shown never
// holds a piece of a tag, and only grows towards the whole reply's split.
func TestSplitThinkingStreaming(t *testing.T) {
	for _, full := range []string{
		"<think>\nFirst, 2+2.\n\nThen 4 - 1.\n</think>\n\nIt is **3**.",
		"<think></think>Short.",
		"No thinking here, just words.",
	} {
		final := SplitThinking(full, false)
		var prev Thought
		for n := 0; n <= len(full); n++ {
			got := SplitThinking(full[:n], true)
			if n == len(full) {
				got = SplitThinking(full, false)
			}
			if strings.ContainsAny(got.Thinking+got.Answer, "<>") {
				t.Fatalf("%q: a piece of a tag is shown: %+v", full[:n], got)
			}
			if !strings.HasPrefix(final.Thinking, got.Thinking) || !strings.HasPrefix(final.Answer, got.Answer) {
				t.Fatalf("%q: shows %+v, which the whole reply (%+v) does not continue", full[:n], got, final)
			}
			if !strings.HasPrefix(got.Thinking, prev.Thinking) || !strings.HasPrefix(got.Answer, prev.Answer) || prev.Block && !got.Block {
				t.Fatalf("%q: shows %+v after %+v: it shrank", full[:n], got, prev)
			}
			prev = got
		}
		if prev != final {
			t.Errorf("%q: the stream ends on %+v, want %+v", full, prev, final)
		}
	}
}

// TestSplitThinkingTokens streams a Qwen3 reply token by token through
// the real tokenizer's stream decoder, where <think> and </think> are
// single tokens, and the tiny tokenizer, where they come in pieces.
func TestSplitThinkingTokens(t *testing.T) {
	const reply = "<think>\nThe user greets me.\n</think>\n\nHello! How can I help?"
	for _, path := range []string{testdata + "qwen3-tokenizer/tokenizer.json.gz", testdata + "tiny-tokenizer/tokenizer.json"} {
		tok, err := tokenizer.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		ids := tok.Encode(reply)
		dec, text, states := tok.NewStreamDecoder(), "", map[bool]int{}
		for _, id := range ids {
			text += dec.Add(id)
			th := SplitThinking(text, true)
			states[th.Open]++
			if strings.ContainsAny(th.Thinking+th.Answer, "<>") {
				t.Errorf("%s: after %q shows a piece of a tag: %+v", path, text, th)
			}
		}
		text += dec.Flush()
		got := SplitThinking(text, false)
		if want := (Thought{Thinking: "The user greets me.", Answer: "Hello! How can I help?", Block: true}); got != want {
			t.Errorf("%s: %d tokens end on %+v, want %+v", path, len(ids), got, want)
		}
		if states[true] == 0 || states[false] == 0 {
			t.Errorf("%s: %d tokens never showed both the open block and the answer: %v", path, len(ids), states)
		}
	}
}

func TestSwitchesThinking(t *testing.T) {
	qwen, err := Parse(readFile(t, testdata+"qwen3-tokenizer/tokenizer_config.json.gz"), "qwen3_config")
	if err != nil {
		t.Fatal(err)
	}
	if !qwen.SwitchesThinking() || !qwen.ThinksByDefault() {
		t.Errorf("Qwen3's template: SwitchesThinking %v, ThinksByDefault %v; want both", qwen.SwitchesThinking(), qwen.ThinksByDefault())
	}
	if qwen.OpensThinking(nil) {
		t.Error("Qwen3's template: OpensThinking true; the model writes <think> itself")
	}
	// A template that opens the block in the prompt when thinking is on.
	opens := mustParse(t, "{{ messages[0].content }}{% if enable_thinking is not defined or enable_thinking %}<think>\n{% endif %}")
	off := false
	if !opens.OpensThinking(nil) || opens.OpensThinking(&off) {
		t.Errorf("a template opening <think>: OpensThinking %v unset, %v off; want true, false", opens.OpensThinking(nil), opens.OpensThinking(&off))
	}
	// A template that thinks only when asked.
	asked := mustParse(t, "{{ messages[0].content }}{% if enable_thinking is defined and enable_thinking %}<think>{% endif %}")
	if !asked.SwitchesThinking() || asked.ThinksByDefault() {
		t.Errorf("a template thinking when asked: SwitchesThinking %v, ThinksByDefault %v; want true, false", asked.SwitchesThinking(), asked.ThinksByDefault())
	}
	for name, tpl := range llamaTemplates(t) {
		if tpl.SwitchesThinking() {
			t.Errorf("%s: SwitchesThinking true", name)
		}
	}
}

// TestEndOfTurn: the token after an assistant turn, whatever the
// eos_token says.
func TestEndOfTurn(t *testing.T) {
	qtok, err := tokenizer.Load(testdata + "qwen3-tokenizer/tokenizer.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	ltok, err := tokenizer.Load(testdata + "llama3-tokenizer/tokenizer.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	qcfg := string(readFile(t, testdata+"qwen3-tokenizer/tokenizer_config.json.gz"))
	// Qwen3's base models ship the same template with <|endoftext|> as
	// their eos_token.
	base, err := Parse([]byte(strings.Replace(qcfg, `"eos_token": "<|im_end|>"`, `"eos_token": "<|endoftext|>"`, 1)), "base")
	if err != nil {
		t.Fatal(err)
	}
	if base.EOS() != "<|endoftext|>" {
		t.Fatalf("the base config's eos_token is %q: the replacement missed", base.EOS())
	}
	plain := mustParse(t, "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}")
	cases := []struct {
		reason string
		tpl    *Template
		tok    *tokenizer.Tokenizer
		want   int32
		ok     bool
	}{
		{"ChatML", base, qtok, 151645, true},
		{"Llama 3.1", llamaTemplates(t)["meta_llama3_1"], ltok, 128009, true},
		{"a template without special tokens", plain, ltok, 0, false},
	}
	for _, c := range cases {
		if id, ok := c.tpl.EndOfTurn(c.tok); id != c.want || ok != c.ok {
			t.Errorf("%s: EndOfTurn = %d, %v; want %d, %v", c.reason, id, ok, c.want, c.ok)
		}
	}
}
