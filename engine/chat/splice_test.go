package chat

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine/tokenizer"
)

// TestEncodeReplies: a reply's generated ids stand in for its text where
// the template renders the text as it is, and only there.
func TestEncodeReplies(t *testing.T) {
	llama, err := tokenizer.Load(testdata + "llama3-tokenizer/tokenizer.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	qwen, err := tokenizer.Load(testdata + "qwen3-tokenizer/tokenizer.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	qwenTpl, err := Parse(readFile(t, testdata+"qwen3-tokenizer/tokenizer_config.json.gz"), "qwen3_config")
	if err != nil {
		t.Fatal(err)
	}
	llamaTpl := llamaTemplates(t)["meta_llama3_2"]
	reply := "Hello <|eot_id|> there"
	msgs := []Message{{Role: "user", Content: "Hi"}, {Role: "assistant", Content: reply}, {Role: "user", Content: "More"}}
	opt := Options{AddGenerationPrompt: true}

	plain, err := llamaTpl.Encode(llama, msgs, opt)
	if err != nil {
		t.Fatal(err)
	}
	same, err := llamaTpl.EncodeReplies(llama, msgs, opt, [][]int32{nil, llama.Encode(reply), nil})
	if err != nil || !slices.Equal(same, plain) {
		t.Fatalf("with the ids the text encodes to: %v (%v), want Encode's %v", same, err, plain)
	}
	natural := llama.Encode(reply)
	at := indexOf(plain, natural)
	if at < 0 {
		t.Fatalf("the reply's ids %v are not in the prompt %v", natural, plain)
	}
	generated := []int32{1, 2, 3}
	spliced, err := llamaTpl.EncodeReplies(llama, msgs, opt, [][]int32{nil, generated, nil})
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Concat(plain[:at], generated, plain[at+len(natural):])
	if !slices.Equal(spliced, want) {
		t.Errorf("spliced %v, want %v: the generated ids in place of the text's", spliced, want)
	}

	// Qwen3 drops an earlier turn's reasoning from the prompt: that reply
	// is not what the template renders, so its text is encoded.
	think := "<think>\nsome thought\n</think>\n\nThe answer."
	qmsgs := []Message{{Role: "user", Content: "Q"}, {Role: "assistant", Content: think}, {Role: "user", Content: "Again"}}
	want, err = qwenTpl.Encode(qwen, qmsgs, opt)
	if err != nil {
		t.Fatal(err)
	}
	got, err := qwenTpl.EncodeReplies(qwen, qmsgs, opt, [][]int32{nil, {1, 2, 3}, nil})
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("a reply the template changes: %v (%v), want Encode's %v", got, err, want)
	}
}

// indexOf is where sub starts in a, or -1.
func indexOf(a, sub []int32) int {
	for i := 0; i+len(sub) <= len(a); i++ {
		if slices.Equal(a[i:i+len(sub)], sub) {
			return i
		}
	}
	return -1
}

// TestFromSource: a template given as its source renders as the same
// template read from tokenizer_config.json, and the empty or oversized
// source is refused.
func TestFromSource(t *testing.T) {
	src := "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
	tpl, err := FromSource(src, "<|im_start|>", "<|im_end|>", "test.gguf")
	if err != nil {
		t.Fatal(err)
	}
	got, err := tpl.Render([]Message{{Role: "user", Content: "Hi"}}, Options{AddGenerationPrompt: true})
	if want := "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"; err != nil || got != want {
		t.Errorf("render %q (%v), want %q", got, err, want)
	}
	if tpl.EOS() != "<|im_end|>" {
		t.Errorf("EOS %q", tpl.EOS())
	}
	if _, err := FromSource("", "", "", "x.gguf"); !errors.Is(err, ErrNoTemplate) {
		t.Errorf("empty source: %v", err)
	}
	if _, err := FromSource(strings.Repeat("a", MaxSource+1), "", "", "x.gguf"); err == nil {
		t.Error("an oversized source was compiled")
	}
}
