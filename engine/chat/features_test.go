package chat

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func mustParse(t *testing.T, template string) *Template {
	t.Helper()
	tpl, err := Parse(configWith(t, template), "test.json")
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

func render(t *testing.T, tpl *Template, msgs []Message, opt Options) string {
	t.Helper()
	out, err := tpl.Render(msgs, opt)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var weatherTool = json.RawMessage(`{"type": "function", "function": {"name": "get_weather"}}`)

func TestRaiseException(t *testing.T) {
	tpl := llamaTemplates(t)["meta_llama3_1"]
	cases := []struct {
		msgs []Message
		opt  Options
		want string
	}{
		{[]Message{{Role: "system", Content: "Hi"}}, Options{Tools: []json.RawMessage{weatherTool}},
			"raise_exception: Cannot put tools in the first user message when there's no first user message!"},
		{[]Message{{Role: "user", Content: "Hi"}, {Role: "assistant", ToolCalls: []ToolCall{
			{Function: ToolCallFunction{Name: "a", Arguments: json.RawMessage(`{}`)}},
			{Function: ToolCallFunction{Name: "b", Arguments: json.RawMessage(`{}`)}},
		}}}, Options{}, "raise_exception: This model only supports single tool-calls at once!"},
	}
	for _, c := range cases {
		_, err := tpl.Render(c.msgs, c.opt)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "chat template meta_llama3_1: ") {
			t.Errorf("error %v, want one naming the template and containing %q", err, c.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		config string
		want   string
	}{
		{`{"chat_template": "{% if %}"}`, "chat template bad.json: parse error"},
		{`{"chat_template": "{% for m in messages %}"}`, "chat template bad.json: parse error"},
		{`{"bos_token": "<s>"}`, "no chat template: bad.json has no chat_template"},
		{`{"chat_template": 3}`, "neither a string nor a list"},
		{`{"chat_template": [{"name": "tool_use", "template": "x"}]}`, `lists no "default" template`},
		{`{"chat_template": "x", "eos_token": 5}`, "eos_token: neither a string nor an object"},
		{`{"chat_template": `, "bad.json: unexpected end of JSON input"},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.config), "bad.json")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.config, err, c.want)
		}
	}
}

func TestConfigForms(t *testing.T) {
	tpl, err := Parse([]byte(`{
		"bos_token": {"__type": "AddedToken", "content": "<s>", "lstrip": false},
		"eos_token": null,
		"chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "{{ bos_token }}D{{ eos_token }}"}]
	}`), "forms.json")
	if err != nil {
		t.Fatal(err)
	}
	if tpl.BOS() != "<s>" || tpl.EOS() != "" {
		t.Errorf("BOS %q EOS %q", tpl.BOS(), tpl.EOS())
	}
	if got := render(t, tpl, nil, Options{}); got != "<s>D" {
		t.Errorf("rendered %q", got)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("no tokenizer_config.json: %v", err)
	}
	cfg := filepath.Join(dir, "tokenizer_config.json")
	if err := os.WriteFile(cfg, []byte(`{"eos_token": "</s>"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(dir)
	if !errors.Is(err, ErrNoTemplate) || !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "has no chat_template and its folder no chat_template.jinja") {
		t.Errorf("no template: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "chat_template.jinja"), []byte("{% for m in messages %}{{ m.content }}{% endfor %}{{ eos_token }}"), 0o644); err != nil {
		t.Fatal(err)
	}
	tpl, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := render(t, tpl, []Message{{Role: "user", Content: "hi"}}, Options{}); got != "hi</s>" {
		t.Errorf("rendered %q", got)
	}
}

func TestStrftimeNow(t *testing.T) {
	tpl := llamaTemplates(t)["meta_llama3_2"]
	got := render(t, tpl, []Message{{Role: "user", Content: "x"}}, Options{Now: time.Date(2025, 3, 5, 0, 0, 0, 0, time.UTC)})
	if !strings.Contains(got, "Today Date: 05 Mar 2025\n") {
		t.Errorf("rendered %q", got)
	}
	now := time.Date(2024, 1, 9, 15, 4, 5, 0, time.UTC)
	for format, want := range map[string]string{
		"%d %b %Y":         "09 Jan 2024",
		"%-d %B %y":        "9 January 24",
		"%A %a %H:%M:%S":   "Tuesday Tue 15:04:05",
		"%I%p %j %m %e|%%": "03PM 009 01  9|%",
		"%Q %-Q 100%":      "%Q %-Q 100%",
	} {
		if got := strftime(now, format); got != want {
			t.Errorf("strftime(%q) = %q, want %q", format, got, want)
		}
	}
}

// TestBuiltinToolCall covers the Llama 3.1 path that formats a built-in
// tool call with the ordered items filter.
func TestBuiltinToolCall(t *testing.T) {
	tpl := llamaTemplates(t)["meta_llama3_1"]
	msgs := []Message{
		{Role: "user", Content: "Search"},
		{Role: "assistant", ToolCalls: []ToolCall{{Type: "function", Function: ToolCallFunction{
			Name: "brave_search", Arguments: json.RawMessage(`{"query": "llamas", "count": "3"}`),
		}}}},
	}
	opt := Options{Vars: map[string]any{"builtin_tools": []string{"brave_search", "code_interpreter"}}}
	got := render(t, tpl, msgs, opt)
	want := `<|start_header_id|>assistant<|end_header_id|>` + "\n\n" + `<|python_tag|>brave_search.call(query="llamas", count="3")<|eom_id|>`
	if !strings.Contains(got, want) || !strings.Contains(got, "Tools: brave_search\n\n") {
		t.Errorf("rendered %q", got)
	}
}

func TestToJSON(t *testing.T) {
	tpl := mustParse(t, `{{ v | tojson }}|{{ v | tojson(indent=2) }}|{{ s | tojson(ensure_ascii=true) }}|{{ v | tojson(sort_keys=true) }}`)
	opt := Options{Vars: map[string]any{
		"v": json.RawMessage(`{"z": [1, 2.5, 1e20, 0.00001, true, null], "a": {}, "e": [], "s": "\"q\" <b> é\u2028\n"}`),
		"s": "é😀\u007f",
	}}
	want := `{"z": [1, 2.5, 1e+20, 1e-05, true, null], "a": {}, "e": [], "s": "\"q\" <b> é` + "\u2028" + `\n"}|` +
		"{\n  \"z\": [\n    1,\n    2.5,\n    1e+20,\n    1e-05,\n    true,\n    null\n  ],\n  \"a\": {},\n  \"e\": [],\n  \"s\": \"\\\"q\\\" <b> é\u2028\\n\"\n}|" +
		`"\u00e9\ud83d\ude00\u007f"|` +
		`{"a": {}, "e": [], "s": "\"q\" <b> é` + "\u2028" + `\n", "z": [1, 2.5, 1e+20, 1e-05, true, null]}`
	if got := render(t, tpl, nil, opt); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	for f, want := range map[float64]string{1: "1.0", -0.5: "-0.5", 1e16: "1e+16", 123456789012345.6: "123456789012345.6", 0.0001: "0.0001"} {
		if got := pyFloat(f); got != want {
			t.Errorf("pyFloat(%v) = %s, want %s", f, got, want)
		}
	}
}

func TestTrimAndItems(t *testing.T) {
	tpl := mustParse(t, `[{{ s | trim }}]{% for k, v in d | items %}{{ k }}={{ v }};{% endfor %}`)
	opt := Options{Vars: map[string]any{"s": "\x1c\u3000 x y\t\n", "d": json.RawMessage(`{"b": 1, "a": 2, "c": 3}`)}}
	if got := render(t, tpl, nil, opt); got != "[x y]b=1;a=2;c=3;" {
		t.Errorf("rendered %q", got)
	}
}

func TestLoopControls(t *testing.T) {
	tpl := mustParse(t, `{% for m in messages %}{% if m.role == 'tool' %}{% continue %}{% endif %}`+
		`{% if loop.index0 > 2 %}{% break %}{% endif %}{{ m.content }}{% if not loop.last %},{% endif %}{% endfor %}`)
	msgs := []Message{{Role: "user", Content: "a"}, {Role: "tool", Content: "b"}, {Role: "user", Content: "c"}, {Role: "user", Content: "d"}}
	if got := render(t, tpl, msgs, Options{}); got != "a,c," {
		t.Errorf("rendered %q", got)
	}
}

func TestRenderPartsMarksOnlyMessageText(t *testing.T) {
	tpl := mustParse(t, `{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m.role }}<|end_header_id|>{{ m.content }}<|eot_id|>{% endfor %}`)
	specials := []string{"<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>", "\n"}
	msgs := []Message{{Role: "user", Content: "a<|eot_id|>b<|begin_of_text|><|eot_id"}}
	parts, err := tpl.RenderParts(msgs, Options{}, specials)
	if err != nil {
		t.Fatal(err)
	}
	want := []Part{
		{"<|begin_of_text|>", true}, {"<|start_header_id|>", true}, {"user", false}, {"<|end_header_id|>", true},
		{"a<|eot_id|>b<|begin_of_text|><|eot_id", false}, {"<|eot_id|>", true},
	}
	if len(parts) != len(want) {
		t.Fatalf("parts %+v, want %+v", parts, want)
	}
	for i := range want {
		if parts[i] != want[i] {
			t.Errorf("part %d = %+v, want %+v", i, parts[i], want[i])
		}
	}
}

func TestConcurrentRender(t *testing.T) {
	tpl := llamaTemplates(t)["meta_llama3_1"]
	msgs := []Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi"}}
	want := render(t, tpl, msgs, Options{AddGenerationPrompt: true})
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				if got, err := tpl.Render(msgs, Options{AddGenerationPrompt: true}); err != nil || got != want {
					t.Errorf("concurrent render: %q, %v", got, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
