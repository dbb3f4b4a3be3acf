package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"
	"unicode"

	"github.com/nikolalohinski/gonja/v2/builtins"
	controlStructures "github.com/nikolalohinski/gonja/v2/builtins/control_structures"
	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/nodes"
	"github.com/nikolalohinski/gonja/v2/parser"
)

// gonjaConfig matches transformers' Jinja environment.
var gonjaConfig = func() *config.Config {
	c := config.New()
	c.TrimBlocks = true
	c.LeftStripBlocks = true
	return c
}()

// environment is gonja's built-ins (loop controls included) with this
// package's filters, in private copies of the sets so that gonja's
// defaults stay as they are, and with every render bounded (limits.go):
// each control structure, filter and method is guarded, range is
// bounded, and the control structures that reach other templates
// (include, import, extends, block) are refused — a chat template is one
// string.
var environment = func() *exec.Environment {
	filters := map[string]exec.FilterFunction{}
	for _, name := range setKeys(builtins.Filters, "filters") {
		f, _ := builtins.Filters.Get(name)
		filters[name] = f
	}
	filters["tojson"], filters["trim"], filters["items"] = filterToJSON, filterTrim, filterItems
	filters[repeatLeftFilter], filters[repeatFilter] = filterRepeatLeft, filterRepeat
	for name, f := range filters {
		filters[name] = guardFilter(name, f)
	}
	structures := map[string]parser.ControlStructureParser{}
	for _, name := range setKeys(builtins.ControlStructures, "statements") {
		p, _ := builtins.ControlStructures.Get(name)
		structures[name] = guardParser(name, p)
	}
	for _, name := range []string{"include", "import", "from", "extends", "block"} {
		structures[name] = refuseParser(name)
	}
	ctx := exec.EmptyContext().Update(builtins.GlobalFunctions).Update(builtins.GlobalVariables)
	ctx.Set("range", boundedRange)
	ctx.Set("lipsum", func() (string, error) { return "", errors.New("lipsum is not available in chat templates") })
	m := builtins.Methods
	return &exec.Environment{
		Context:           ctx,
		Filters:           exec.NewFilterSet(filters),
		Tests:             builtins.Tests,
		ControlStructures: exec.NewControlStructureSet(structures),
		Methods:           exec.Methods{Bool: m.Bool, Int: m.Int, Float: m.Float, Str: guardStrMethods(m.Str), Dict: m.Dict, List: m.List},
	}
}()

// setKeys lists the names in one of gonja's registries (FilterSet,
// ControlStructureSet, MethodSet), which offer no way to list them: the
// map field is read by reflection. A renamed field panics here, at
// start-up, and in every test.
func setKeys(set any, field string) []string {
	var names []string
	for _, k := range reflect.ValueOf(set).Elem().FieldByName(field).MapKeys() {
		names = append(names, k.String())
	}
	return names
}

// guardParser wraps a control structure's parser so that what it parses
// checks the render's budget (guarded); macros count their calls, and
// recursive for loops, which recurse through expressions no check sees,
// are refused.
func guardParser(name string, parse parser.ControlStructureParser) parser.ControlStructureParser {
	return func(p, args *parser.Parser) (nodes.ControlStructure, error) {
		cs, err := parse(p, args)
		if err != nil {
			return nil, err
		}
		switch c := cs.(type) {
		case *controlStructures.ForControlStructure:
			if c.Recursive {
				return nil, args.Error("recursive for loops are not supported in chat templates", nil)
			}
		case *controlStructures.MacroControlStructure:
			cs = countedMacro{c}
		}
		ecs, ok := cs.(exec.ControlStructure)
		if !ok {
			return nil, fmt.Errorf("control structure %s cannot be executed", name)
		}
		return guarded{ecs}, nil
	}
}

func refuseParser(name string) parser.ControlStructureParser {
	return func(p, args *parser.Parser) (nodes.ControlStructure, error) {
		return nil, args.Error(fmt.Sprintf("{%% %s %%} is not supported in chat templates", name), nil)
	}
}

// countedMacro defines a macro whose calls check the budget and count as
// nesting, so that a macro calling itself stops at MaxNesting instead of
// overflowing the stack.
type countedMacro struct {
	*controlStructures.MacroControlStructure
}

func (m countedMacro) Execute(r *exec.Renderer, _ *nodes.ControlStructureBlock) error {
	macro, err := exec.MacroNodeToFunc(m.Macro, r)
	if err != nil {
		return fmt.Errorf("macro %s: %w", m.Name, err)
	}
	b := budgetOf(r.Environment.Context)
	r.Environment.Context.Set(m.Name, exec.Macro(func(params *exec.VarArgs) *exec.Value {
		if err := b.enter(); err != nil {
			return exec.AsValue(err)
		}
		defer b.leave()
		return macro(params)
	}))
	return nil
}

// guardStrMethods wraps the string methods that pad to a width
// ("x".center(n), zfill, ljust) so that a width above MaxOutput is
// refused: methods get no context, so they cannot see the render's
// budget.
func guardStrMethods(set *exec.MethodSet[string]) *exec.MethodSet[string] {
	out := map[string]exec.Method[string]{}
	for _, name := range setKeys(set, "methods") {
		method, _ := set.Get(name)
		out[name] = method
		if widthMethods[name] {
			out[name] = func(self string, v *exec.Value, args *exec.VarArgs) (any, error) {
				if n, wide := widest(args, MaxOutput); wide {
					return nil, fmt.Errorf("method %s: width %d is larger than a render may produce", name, n)
				}
				return method(self, v, args)
			}
		}
	}
	return exec.NewMethodSet(out)
}

// context builds the template variables, as transformers passes them.
// The message of a raise_exception call is stored in *raised.
func (t *Template) context(msgs []Message, opt Options, sanitize func(string) string, raised *string) (map[string]any, error) {
	conv := converter{sanitize: sanitize}
	messages := make([]any, len(msgs))
	for i, m := range msgs {
		d, err := conv.message(m)
		if err != nil {
			return nil, fmt.Errorf("chat template %s: message %d: %w", t.name, i, err)
		}
		messages[i] = d
	}
	now := opt.Now
	if now.IsZero() {
		now = time.Now()
	}
	data := map[string]any{
		"messages":              messages,
		"add_generation_prompt": opt.AddGenerationPrompt,
		"strftime_now":          func(format string) string { return strftime(now, format) },
		"raise_exception": func(msg string) (string, error) {
			*raised = msg
			return "", errors.New(msg)
		},
	}
	if t.bos != "" {
		data["bos_token"] = t.bos
	}
	if t.eos != "" {
		data["eos_token"] = t.eos
	}
	if opt.EnableThinking != nil {
		data["enable_thinking"] = *opt.EnableThinking
	}
	if len(opt.Tools) > 0 {
		tools := make([]any, len(opt.Tools))
		for i, raw := range opt.Tools {
			v, err := converter{}.json(raw)
			if err != nil {
				return nil, fmt.Errorf("chat template %s: tool %d: %w", t.name, i, err)
			}
			tools[i] = v
		}
		data["tools"] = tools
	}
	for k, v := range opt.Vars {
		if raw, ok := v.(json.RawMessage); ok {
			var err error
			if v, err = (converter{}).json(raw); err != nil {
				return nil, fmt.Errorf("chat template %s: variable %s: %w", t.name, k, err)
			}
		}
		data[k] = v
	}
	return data, nil
}

// converter turns messages and JSON into template values: JSON objects
// become ordered gonja Dicts, and strings that came from messages pass
// through sanitize.
type converter struct {
	sanitize func(string) string
}

func (c converter) str(s string) string {
	if c.sanitize == nil {
		return s
	}
	return c.sanitize(s)
}

func dict(kv ...any) *exec.Dict {
	d := exec.NewDict()
	for i := 0; i < len(kv); i += 2 {
		d.Pairs = append(d.Pairs, &exec.Pair{Key: exec.AsValue(kv[i]), Value: exec.AsValue(kv[i+1])})
	}
	return d
}

func (c converter) message(m Message) (*exec.Dict, error) {
	d := dict("role", m.Role)
	// An assistant message that only calls tools has no content, as in
	// the OpenAI format transformers receives.
	if m.Content != "" || len(m.ToolCalls) == 0 {
		d.Pairs = append(d.Pairs, &exec.Pair{Key: exec.AsValue("content"), Value: exec.AsValue(c.str(m.Content))})
	}
	if m.ReasoningContent != "" {
		d.Pairs = append(d.Pairs, &exec.Pair{Key: exec.AsValue("reasoning_content"), Value: exec.AsValue(c.str(m.ReasoningContent))})
	}
	if len(m.ToolCalls) == 0 {
		return d, nil
	}
	calls := make([]any, len(m.ToolCalls))
	for i, tc := range m.ToolCalls {
		var args any
		if len(tc.Function.Arguments) > 0 {
			var err error
			if args, err = c.json(tc.Function.Arguments); err != nil {
				return nil, fmt.Errorf("tool call %d arguments: %w", i, err)
			}
		}
		call := dict("function", dict("name", c.str(tc.Function.Name), "arguments", args))
		if tc.Type != "" {
			call.Pairs = append([]*exec.Pair{{Key: exec.AsValue("type"), Value: exec.AsValue(tc.Type)}}, call.Pairs...)
		}
		if tc.ID != "" {
			call.Pairs = append(call.Pairs, &exec.Pair{Key: exec.AsValue("id"), Value: exec.AsValue(tc.ID)})
		}
		calls[i] = call
	}
	d.Pairs = append(d.Pairs, &exec.Pair{Key: exec.AsValue("tool_calls"), Value: exec.AsValue(calls)})
	return d, nil
}

// json decodes one JSON value, objects as ordered Dicts, integers as int
// and other numbers as float64.
func (c converter) json(raw json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := c.value(dec)
	if err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("invalid JSON: data after the value")
	}
	return v, nil
}

func (c converter) value(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	switch tok := tok.(type) {
	case json.Delim:
		if tok == '{' {
			d := exec.NewDict()
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return nil, fmt.Errorf("invalid JSON: %w", err)
				}
				v, err := c.value(dec)
				if err != nil {
					return nil, err
				}
				d.Pairs = append(d.Pairs, &exec.Pair{Key: exec.AsValue(c.str(k.(string))), Value: exec.AsValue(v)})
			}
			_, err := dec.Token()
			return d, err
		}
		list := []any{}
		for dec.More() {
			v, err := c.value(dec)
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
		_, err := dec.Token()
		return list, err
	case json.Number:
		if i, err := tok.Int64(); err == nil {
			return int(i), nil
		}
		return tok.Float64()
	case string:
		return c.str(tok), nil
	}
	return tok, nil // bool or nil
}

// isPySpace is Python's str.isspace: Unicode White_Space plus the
// separators U+001C..U+001F.
func isPySpace(r rune) bool { return unicode.IsSpace(r) || (r >= 0x1C && r <= 0x1F) }

// filterTrim is Jinja's trim: Python's str.strip(chars).
func filterTrim(_ *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	var chars *exec.Value
	if err := params.Take(exec.KeywordArgument("chars", exec.AsValue(nil), func(v *exec.Value) error {
		chars = v
		return nil
	})); err != nil {
		return exec.AsValue(exec.ErrInvalidCall(err))
	}
	if !in.IsString() {
		return exec.AsValue(exec.ErrInvalidCall(fmt.Errorf("trim: %s is not a string", in.String())))
	}
	if chars.IsNil() {
		return exec.AsValue(strings.TrimFunc(in.String(), isPySpace))
	}
	return exec.AsValue(strings.Trim(in.String(), chars.String()))
}

// filterItems is Jinja's items, keeping the order of ordered mappings.
func filterItems(_ *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	if err := params.Take(); err != nil {
		return exec.AsValue(exec.ErrInvalidCall(err))
	}
	if in.IsNil() {
		return exec.AsValue([]any{})
	}
	if !in.IsDict() {
		return exec.AsValue(exec.ErrInvalidCall(fmt.Errorf("items: %s is not a mapping", in.String())))
	}
	keys := in.Keys()
	out := make([]any, len(keys))
	for i, k := range keys {
		v, _ := in.GetItem(k.Interface())
		out[i] = []any{k.Interface(), v.Interface()}
	}
	return exec.AsValue(out)
}
