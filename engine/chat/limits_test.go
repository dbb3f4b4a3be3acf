package chat

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// small are render limits small enough that each case below stays
// cheap when it is not enforced.
var small = limits{output: 4 << 10, time: 500 * time.Millisecond, memory: 64 << 20}

func TestRenderIsBounded(t *testing.T) {
	roomy := small
	roomy.time, roomy.memory = time.Minute, 1<<40
	quick := roomy
	quick.time = time.Microsecond // over at the first check, however fast the machine
	spare := roomy
	spare.memory = 8 << 20
	for _, tc := range []struct {
		lim                    limits
		template, want, reason string
	}{
		{small, "{% for i in range(100001) %}{% endfor %}", "range of more than 100000 numbers",
			"range is bounded as in Jinja's sandbox (a loop of 1e8 took 2.6 GB in 25 s)"},
		{quick, "{% for i in range(300) %}{% for j in range(300) %}{% if j %}{% endif %}{% endfor %}{% endfor %}", "rendering took longer than 1µs",
			"a render is bounded in time"},
		{roomy, "{% for i in range(100) %}{{ '0123456789' * 10 }}{% endfor %}", "the prompt would be longer than the 4 KiB a render may produce",
			"the output is bounded"},
		{spare, "{% set ns = namespace(s='0123456789abcdef') %}{% for i in range(22) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}", "rendering allocated more than 8 MiB of memory",
			"the memory a render takes is bounded, even when nothing is written"},
		{roomy, "{{ 'ab' * 3000 }}", "repeating a string of 2 bytes 3000 times would be longer than the 4 KiB",
			"a repetition is refused before it is built ('a' * 10**11 ran out of memory)"},
		{roomy, "{{ 'x'|center(100000) }}", "filter center with argument 100000 would be longer",
			"a filter is refused a width the output could not hold"},
		{roomy, "{{ 'ab' * '3000' }}", "repeating a string of 2 bytes 3000 times",
			"a count given as a string is checked as gonja reads it"},
		{roomy, "{{ 'x'.center(100000000000) }}", "method center: width 100000000000",
			"so is a string method"},
		{roomy, "{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(1500) }}", "nest deeper than 1000",
			"macro recursion is bounded (unbounded, it overflowed the stack)"},
	} {
		tpl := mustParse(t, tc.template)
		tpl.limits = tc.lim
		_, err := tpl.Render([]Message{{Role: "user", Content: "hi"}}, Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "chat template test.json: ") {
			t.Errorf("%s: err = %v, want one naming the template and saying %q", tc.reason, err, tc.want)
		}
	}
}

func TestRenderKeepsWhatLimitsAllow(t *testing.T) {
	for _, tc := range []struct{ template, want, reason string }{
		{"{{ 'a' * -1 }}|{{ 'ab' * 3 }}|{{ 2 * 3 }}|{{ 2.5 * 2 }}", "|ababab|6|5.0", "repetition keeps Python's meaning; a negative count panicked in gonja"},
		{"{{ range(3)|list }} {{ range(1, 7, 2)|list }} {{ range(5, 0, -2)|list }} {{ range(0)|list }}", "[0, 1, 2] [1, 3, 5] [5, 3, 1] []", "range counts as Python's does"},
		{"{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{% endif %}{{ n }}{% endmacro %}{{ f(3) }}", "0123", "a macro may recurse a little"},
		{"{% set x = {'a': ' ' * 4 ~ 'b'} %}{{ x.a }}", "    b", "an expression inside {% set %} is guarded and still works"},
		{"{{ 'x'|default(100000000) }} {{ 'ab' * '2' }}", "x abab", "only width arguments are bounded; a count may be a string, as gonja takes it"},
		{"{% set ns = namespace(n=0) %}{% macro inc() %}{% set ns.n = ns.n + 1 %}x{% endmacro %}{{ inc() * 2 }}{{ ns.n }}", "xx1",
			"the guarded operands are evaluated once"},
	} {
		tpl := mustParse(t, tc.template)
		tpl.limits = small
		if got := render(t, tpl, nil, Options{}); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.reason, got, tc.want)
		}
	}
}

func TestParseRefusesWhatCannotBeBounded(t *testing.T) {
	for _, tc := range []struct{ template, want, reason string }{
		{"{% for x in [1] recursive %}{{ loop([1]) }}{% endfor %}", "recursive for loops are not supported",
			"loop(...) recursion passes no check and overflowed the stack"},
		{"{% include '/chat_template' %}", "{% include %} is not supported", "a template that includes itself recurses"},
		{"{% block b %}{{ self.b() }}{% endblock %}", "{% block %} is not supported", "so does a block that renders itself"},
		{"{%if 0 is %}0", "parse error: the template engine failed", "a panic of gonja's parser is an error (FuzzRender found it)"},
		{"{{ " + strings.Repeat("(", 600) + "1" + strings.Repeat(")", 600) + " }}", "line 1: a tag of more than 1000 tokens",
			"100,000 nested brackets overflowed the parser's stack"},
	} {
		_, err := Parse(configWith(t, tc.template), "test.json")
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "test.json") {
			t.Errorf("%s: err = %v, want %q", tc.reason, err, tc.want)
		}
	}
	long := "{{ '" + strings.Repeat("x", MaxSource) + "' }}"
	if _, err := Parse(configWith(t, long), "test.json"); err == nil || !strings.Contains(err.Error(), "longer than 1 MiB") {
		t.Errorf("a template over MaxSource: err = %v", err)
	}
}

func TestLoadBoundsFileSizes(t *testing.T) {
	for _, tc := range []struct {
		file string
		size int64
		want string
	}{
		{"tokenizer_config.json", 17 << 20, "tokenizer_config.json is larger than 16 MiB"},
		{"chat_template.jinja", 2 << 20, "chat_template.jinja is larger than 1 MiB"},
	} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(`{"bos_token": "<s>"}`), 0o644)
		f, err := os.Create(filepath.Join(dir, tc.file))
		if err != nil {
			t.Fatal(err)
		}
		f.Truncate(tc.size) // sparse
		f.Close()
		if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s of %d bytes: err = %v, want %q", tc.file, tc.size, err, tc.want)
		}
	}
}

func FuzzRender(f *testing.F) {
	for _, tpl := range llamaTemplates(f) {
		f.Add(tpl.source)
	}
	f.Add("{% for m in messages %}{{ m.role ~ ': ' ~ m.content|trim }}{% endfor %}")
	f.Add("{% macro f(n) %}{{ f(n) * 2 }}{% endmacro %}{{ f(1)|center(9) }}")
	f.Add("{% set ns = namespace(x=[]) %}{% for i in range(9) %}{% do ns.x.append(ns.x) %}{% endfor %}{{ ns.x|tojson }}")
	msgs := []Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi <|eot_id|>"}}
	f.Fuzz(func(t *testing.T, source string) {
		tpl, err := Parse(configWith(t, source), "fuzz.json")
		if err != nil {
			return
		}
		tpl.limits = small
		out, err := tpl.Render(msgs, Options{AddGenerationPrompt: true, Now: frozen})
		if err == nil && len(out) > small.output {
			t.Fatalf("rendered %d bytes past the %d-byte limit", len(out), small.output)
		}
	})
}
