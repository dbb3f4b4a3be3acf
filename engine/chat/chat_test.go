package chat

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/driftwoodlabs/driftwood/engine/tokenizer"
)

const testdata = "../../testdata/"

// frozen is the strftime_now time of the goldens.
var frozen = time.Date(2024, 7, 26, 12, 0, 0, 0, time.UTC)

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if data, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
	}
	return data
}

// configWith returns a tokenizer_config.json holding the given template
// with the Llama 3 Instruct special tokens.
func configWith(t testing.TB, template string) []byte {
	t.Helper()
	data, err := json.Marshal(map[string]any{
		"bos_token":     "<|begin_of_text|>",
		"eos_token":     map[string]any{"content": "<|eot_id|>", "__type": "AddedToken"},
		"chat_template": template,
	})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// llamaTemplates parses the three templates of chat_template.jsonl.
func llamaTemplates(t testing.TB) map[string]*Template {
	t.Helper()
	out := map[string]*Template{}
	sources := map[string][]byte{
		"llama3_1_config": readFile(t, testdata+"llama3-tokenizer/tokenizer_config.llama3_1.json.gz"),
		"meta_llama3_1":   configWith(t, string(readFile(t, testdata+"llama3-tokenizer/chat_template.meta_llama3_1.jinja"))),
		"meta_llama3_2":   configWith(t, string(readFile(t, testdata+"llama3-tokenizer/chat_template.meta_llama3_2.jinja"))),
	}
	for name, cfg := range sources {
		tpl, err := Parse(cfg, name)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = tpl
	}
	return out
}

type chatRow struct {
	ID                  string                     `json:"id"`
	Template            string                     `json:"template"`
	Messages            []Message                  `json:"messages"`
	AddGenerationPrompt bool                       `json:"add_generation_prompt"`
	Tools               []json.RawMessage          `json:"tools"`
	TemplateKwargs      map[string]json.RawMessage `json:"template_kwargs"`
	Rendered            string                     `json:"rendered"`
	IDs                 []int32                    `json:"ids"`
	IDsSanitize         []int32                    `json:"ids_sanitize_special_tokens"`
}

// options are the row's render options; enable_thinking goes through
// Options.EnableThinking, the other template kwargs through Vars.
func (r chatRow) options(t *testing.T) Options {
	opt := Options{AddGenerationPrompt: r.AddGenerationPrompt, Tools: r.Tools, Now: frozen, Vars: map[string]any{}}
	for k, v := range r.TemplateKwargs {
		if k == "enable_thinking" {
			var on bool
			if err := json.Unmarshal(v, &on); err != nil {
				t.Fatal(err)
			}
			opt.EnableThinking = &on
			continue
		}
		opt.Vars[k] = v
	}
	return opt
}

func TestLlama3Golden(t *testing.T) {
	tok, err := tokenizer.Load(testdata + "llama3-tokenizer/tokenizer.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	rows, pass := checkGolden(t, tok, llamaTemplates(t), testdata+"llama3-tokenizer/chat_template.jsonl.gz", 54, 3)
	t.Logf("%d/%d chat renders pass (string, ids and sanitized ids)", pass, rows)
}

// TestQwen3Golden renders Qwen3's ChatML template, enable_thinking passed
// through Options.EnableThinking.
func TestQwen3Golden(t *testing.T) {
	tok, err := tokenizer.Load(testdata + "qwen3-tokenizer/tokenizer.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := Parse(readFile(t, testdata+"qwen3-tokenizer/tokenizer_config.json.gz"), "qwen3_config")
	if err != nil {
		t.Fatal(err)
	}
	rows, pass := checkGolden(t, tok, map[string]*Template{"qwen3_config": tpl}, testdata+"qwen3-tokenizer/chat_template.jsonl.gz", 35, 1)
	t.Logf("%d/%d chat renders pass (string, ids and sanitized ids)", pass, rows)
}

// checkGolden checks every row of a chat_template.jsonl file: the render,
// its ids with special-token recognition, and RenderParts' sanitized ids.
// It returns the number of rows and of rows that passed.
func checkGolden(t *testing.T, tok *tokenizer.Tokenizer, templates map[string]*Template, path string, wantRows, wantSanitized int) (rows, pass int) {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(readFile(t, path)))
	sc.Buffer(nil, 1<<20)
	sanitized := 0
	for sc.Scan() {
		var r chatRow
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		rows++
		name := r.ID + "/" + r.Template
		tpl := templates[r.Template]
		got, err := tpl.Render(r.Messages, r.options(t))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if got != r.Rendered {
			t.Errorf("%s: rendered\n%q\nwant\n%q", name, got, r.Rendered)
			continue
		}
		if ids := tok.EncodeWithSpecial(got); !slices.Equal(ids, r.IDs) {
			t.Errorf("%s: ids %v, want %v", name, ids, r.IDs)
			continue
		}
		parts, err := tpl.RenderParts(r.Messages, r.options(t), specialTexts(tok))
		if err != nil {
			t.Errorf("%s: RenderParts: %v", name, err)
			continue
		}
		var joined strings.Builder
		for _, p := range parts {
			joined.WriteString(p.Text)
		}
		want := r.IDs
		if r.IDsSanitize != nil {
			want = r.IDsSanitize
			sanitized++
		}
		if ids, err := EncodeParts(tok, parts); err != nil || joined.String() != r.Rendered || !slices.Equal(ids, want) {
			t.Errorf("%s: parts %+v give ids %v, want %v", name, parts, ids, want)
			continue
		}
		if ids, err := tpl.Encode(tok, r.Messages, r.options(t)); err != nil || !slices.Equal(ids, want) {
			t.Errorf("%s: Encode gives %v, %v, want %v", name, ids, err, want)
			continue
		}
		pass++
	}
	if rows != wantRows || sanitized != wantSanitized {
		t.Errorf("%d rows with %d sanitize rows, want %d and %d", rows, sanitized, wantRows, wantSanitized)
	}
	return rows, pass
}

func TestTinyModelGolden(t *testing.T) {
	dir := testdata + "models/tiny-f32"
	var golden struct {
		Chat struct {
			Messages            []Message `json:"messages"`
			AddGenerationPrompt bool      `json:"add_generation_prompt"`
			Rendered            string    `json:"rendered"`
			IDs                 []int32   `json:"ids"`
		} `json:"chat"`
	}
	if err := json.Unmarshal(readFile(t, dir+"/golden.json.gz"), &golden); err != nil {
		t.Fatal(err)
	}
	tpl, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if tpl.BOS() != "<|begin_of_text|>" || tpl.EOS() != "<|eot_id|>" {
		t.Errorf("BOS %q EOS %q", tpl.BOS(), tpl.EOS())
	}
	tok, err := tokenizer.Load(dir + "/tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	c := golden.Chat
	got, err := tpl.Render(c.Messages, Options{AddGenerationPrompt: c.AddGenerationPrompt})
	if err != nil {
		t.Fatal(err)
	}
	if got != c.Rendered {
		t.Errorf("rendered %q, want %q", got, c.Rendered)
	}
	if ids := tok.EncodeWithSpecial(got); !slices.Equal(ids, c.IDs) {
		t.Errorf("ids %v, want %v", ids, c.IDs)
	}
}

// TestQwen3EndOfTurn: the stop tokens of a reply are the config's eos ids
// and the template's eos_token (chatopen.Loaded.StopTokens). For Qwen3
// the latter is ChatML's end of turn, <|im_end|>, a special token of the
// tokenizer; generation_config.json adds <|endoftext|> (engine.LoadConfig).
func TestQwen3EndOfTurn(t *testing.T) {
	tok, err := tokenizer.Load(testdata + "qwen3-tokenizer/tokenizer.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := Parse(readFile(t, testdata+"qwen3-tokenizer/tokenizer_config.json.gz"), "qwen3_config")
	if err != nil {
		t.Fatal(err)
	}
	if tpl.EOS() != "<|im_end|>" || tpl.BOS() != "" {
		t.Fatalf("EOS %q BOS %q, want <|im_end|> and none", tpl.EOS(), tpl.BOS())
	}
	if id, ok := tok.TokenID(tpl.EOS()); !ok || id != 151645 || !tok.IsSpecial(id) {
		t.Errorf("TokenID(%q) = %d %v, special %v; want the special token 151645", tpl.EOS(), id, ok, tok.IsSpecial(id))
	}
	// Every assistant turn the template renders ends with it.
	ids, err := tpl.Encode(tok, []Message{{Role: "user", Content: "Hi"}, {Role: "assistant", Content: "Hello"}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(ids); n < 2 || ids[n-2] != 151645 {
		t.Errorf("the assistant turn ends %v, want <|im_end|> (151645) then a newline", ids[max(0, n-3):])
	}
}
