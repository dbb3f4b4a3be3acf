// Package chat renders the chat template of a Hugging Face
// tokenizer_config.json into a prompt, as transformers'
// apply_chat_template does.
//
// Templates run on the Jinja engine github.com/nikolalohinski/gonja/v2,
// configured like transformers' sandbox (trim_blocks, lstrip_blocks).
// It was chosen over hand-written renderers because, with the additions in
// this package, it renders every golden case of the Llama 3, 3.1 and 3.2
// templates and of Qwen3's ChatML template exactly, and so also serves
// other models' templates. The
// additions replace what gonja gets wrong for chat templates: tojson
// (Python json.dumps output with key order kept, see pyjson.go), trim
// (Python's whitespace) and items (ordered mappings); each render also gets
// transformers' raise_exception and strftime_now functions.
//
// A template comes from the model folder, so it is treated as hostile:
// each render is bounded in output, time, memory and nesting, and what
// cannot be bounded is refused at parse (see limits.go and MaxOutput).
package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/loaders"

	"github.com/driftwoodlabs/driftwood/internal/limitedfile"
)

// Message is one chat turn.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// ReasoningContent is an assistant turn's thinking kept apart from
	// Content, for templates that read it (Qwen3 re-emits it as a
	// <think> block); the template sees it only when it is not empty.
	ReasoningContent string     `json:"reasoning_content,omitempty"`
	ToolCalls        []ToolCall `json:"tool_calls,omitempty"`
}

// ToolCall is a function call made by the assistant, in the OpenAI shape
// that chat templates expect.
type ToolCall struct {
	ID       string           `json:"id,omitempty"`
	Type     string           `json:"type,omitempty"`
	Function ToolCallFunction `json:"function"`
}

// ToolCallFunction names the function called and its arguments.
type ToolCallFunction struct {
	Name string `json:"name"`
	// Arguments is a JSON object (or a JSON string holding one); the
	// template sees it with its key order kept.
	Arguments json.RawMessage `json:"arguments"`
}

// Options are the inputs of a render besides the messages.
type Options struct {
	// AddGenerationPrompt appends the header that starts the assistant's
	// turn.
	AddGenerationPrompt bool
	// Tools are the JSON schemas of the callable functions, if any.
	Tools []json.RawMessage
	// Now is the time strftime_now formats; zero means time.Now().
	Now time.Time
	// EnableThinking, when set, is the template variable enable_thinking
	// (Qwen3: false asks for an answer without a <think> block); nil
	// leaves it undefined, which Qwen3 takes as true.
	EnableThinking *bool
	// Vars are extra template variables (transformers' template kwargs),
	// such as date_string or tools_in_user_message. A json.RawMessage
	// value is decoded with its key order kept. They take precedence
	// over the fields above.
	Vars map[string]any
}

// Template is a parsed chat template with its special tokens. It is safe
// for concurrent use.
type Template struct {
	name     string
	source   string
	bos, eos string
	tpl      *exec.Template
	limits   limits
}

// ErrNoTemplate is wrapped by the errors of Load and Parse when the model
// has no chat template (a base model). It also matches os.ErrNotExist, as
// does Load's error for a folder without tokenizer_config.json.
var ErrNoTemplate error = noTemplate{}

type noTemplate struct{}

func (noTemplate) Error() string { return "no chat template" }

// Is makes errors.Is(err, os.ErrNotExist) true.
func (noTemplate) Is(target error) bool { return target == fs.ErrNotExist }

// Load reads DIR/tokenizer_config.json; when that has no chat_template,
// DIR/chat_template.jinja is used.
func Load(dir string) (*Template, error) {
	path := filepath.Join(dir, "tokenizer_config.json")
	data, err := limitedfile.Read(path, limitedfile.TokenizerConfig)
	if err != nil {
		return nil, err
	}
	cfg, err := parseConfig(data, path)
	if err != nil {
		return nil, err
	}
	name := path
	if cfg.template == "" {
		name = filepath.Join(dir, "chat_template.jinja")
		src, err := limitedfile.Read(name, MaxSource)
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s has no chat_template and its folder no chat_template.jinja", ErrNoTemplate, path)
		}
		if err != nil {
			return nil, err
		}
		cfg.template = string(src)
	}
	return compile(cfg, name)
}

// Parse reads the chat template and special tokens from the contents of a
// tokenizer_config.json; name is used in error messages.
func Parse(tokenizerConfigJSON []byte, name string) (*Template, error) {
	cfg, err := parseConfig(tokenizerConfigJSON, name)
	if err != nil {
		return nil, err
	}
	if cfg.template == "" {
		return nil, fmt.Errorf("%w: %s has no chat_template", ErrNoTemplate, name)
	}
	return compile(cfg, name)
}

// FromSource compiles a chat template given as its source, with the
// texts of the tokens it calls bos_token and eos_token (a GGUF file's
// tokenizer.chat_template); name is used in error messages.
func FromSource(source, bos, eos, name string) (*Template, error) {
	if source == "" {
		return nil, fmt.Errorf("%w: %s has no chat template", ErrNoTemplate, name)
	}
	return compile(tplConfig{template: source, bos: bos, eos: eos}, name)
}

type tplConfig struct {
	template, bos, eos string
}

// parseConfig reads chat_template (a string, or a list of {name,
// template} from which "default" is taken), bos_token and eos_token (a
// string or an {"content": ...} object).
func parseConfig(data []byte, name string) (tplConfig, error) {
	var raw struct {
		ChatTemplate json.RawMessage `json:"chat_template"`
		BOS          json.RawMessage `json:"bos_token"`
		EOS          json.RawMessage `json:"eos_token"`
	}
	var cfg tplConfig
	if err := json.Unmarshal(data, &raw); err != nil {
		return cfg, fmt.Errorf("chat template: %s: %w", name, err)
	}
	var err error
	if cfg.bos, err = tokenText(raw.BOS); err != nil {
		return cfg, fmt.Errorf("chat template: %s: bos_token: %w", name, err)
	}
	if cfg.eos, err = tokenText(raw.EOS); err != nil {
		return cfg, fmt.Errorf("chat template: %s: eos_token: %w", name, err)
	}
	if len(raw.ChatTemplate) == 0 || string(raw.ChatTemplate) == "null" {
		return cfg, nil
	}
	if json.Unmarshal(raw.ChatTemplate, &cfg.template) == nil {
		return cfg, nil
	}
	var named []struct{ Name, Template string }
	if err := json.Unmarshal(raw.ChatTemplate, &named); err != nil {
		return cfg, fmt.Errorf("chat template: %s: chat_template is neither a string nor a list of named templates", name)
	}
	for _, n := range named {
		if n.Name == "default" {
			cfg.template = n.Template
			return cfg, nil
		}
	}
	return cfg, fmt.Errorf("chat template: %s: chat_template lists no \"default\" template", name)
}

// tokenText reads a special token given as a string, an AddedToken object
// or null.
func tokenText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var obj struct {
		Content *string `json:"content"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil || obj.Content == nil {
		return "", errors.New("neither a string nor an object with content")
	}
	return *obj.Content, nil
}

func compile(cfg tplConfig, name string) (*Template, error) {
	if len(cfg.template) > MaxSource {
		return nil, fmt.Errorf("chat template %s: the template is longer than %s, the most Driftwood reads", name, limitedfile.Size(MaxSource))
	}
	const id = "/chat_template"
	// A memory loader: {% include %} and friends cannot reach the disk.
	loader, err := loaders.NewMemoryLoader(map[string]string{id: cfg.template})
	if err != nil {
		return nil, err
	}
	tpl, err := parse(id, cfg.template, loader)
	if err != nil {
		return nil, fmt.Errorf("chat template %s: %s", name, firstLine(err.Error()))
	}
	guardRepeats(tpl.Root())
	return &Template{name: name, source: cfg.template, bos: cfg.bos, eos: cfg.eos, tpl: tpl, limits: defaultLimits}, nil
}

// parse checks the size of source's tags and parses it (loader holds it
// as id), turning a panic of gonja's lexer or parser (it dereferenced nil
// on "{% if 0 is %}") into an error.
func parse(id, source string, loader loaders.Loader) (tpl *exec.Template, err error) {
	defer func() {
		if p := recover(); p != nil {
			tpl, err = nil, fmt.Errorf("parse error: the template engine failed: %v", p)
		}
	}()
	if err := checkTags(source); err != nil {
		return nil, err
	}
	return exec.NewTemplate(id, gonjaConfig, loader, environment)
}

// firstLine shortens gonja's parse errors, which quote the whole source.
func firstLine(s string) string {
	if i := strings.LastIndex(s, "': "); strings.HasPrefix(s, "failed to parse template '") && i > 0 {
		return "parse error: " + s[i+3:]
	}
	return s
}

// BOS returns the beginning-of-sequence token text ("" if none).
func (t *Template) BOS() string { return t.bos }

// EOS returns the end-of-sequence token text ("" if none).
func (t *Template) EOS() string { return t.eos }

// Render renders the conversation into the prompt text.
func (t *Template) Render(msgs []Message, opt Options) (string, error) {
	return t.render(msgs, opt, nil)
}

// render renders with every message string passed through sanitize when
// it is not nil.
// A render is bounded (see MaxOutput and the other limits): past a bound
// it stops with an error naming the template and the bound.
func (t *Template) render(msgs []Message, opt Options, sanitize func(string) string) (out string, err error) {
	var raised string
	data, err := t.context(msgs, opt, sanitize, &raised)
	if err != nil {
		return "", err
	}
	b := newBudget(t.limits)
	data[budgetKey] = b
	w := &output{b: b}
	defer func() {
		// gonja panics on some values ("a" * -1 did, before filterRepeat);
		// a template must not take the program down.
		if p := recover(); p != nil {
			out, err = "", fmt.Errorf("chat template %s: the template engine failed: %v", t.name, p)
		}
	}()
	err = t.tpl.Execute(w, exec.NewContext(data))
	switch {
	case b.err != nil:
		return "", fmt.Errorf("chat template %s: %w", t.name, b.err)
	case err != nil && raised != "":
		return "", fmt.Errorf("chat template %s: raise_exception: %s", t.name, raised)
	case err != nil:
		return "", fmt.Errorf("chat template %s: %w", t.name, err)
	}
	return w.buf.String(), nil
}
