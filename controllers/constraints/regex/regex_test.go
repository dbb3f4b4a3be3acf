package regex

import (
	"math/rand/v2"
	"regexp"
	"testing"
	"unicode/utf8"

	"github.com/driftwoodlabs/driftwood/controllers/sdk"
	"github.com/driftwoodlabs/driftwood/controllers/sdk/sdktest"
)

func llama(tb testing.TB) *sdktest.Llama3 {
	tb.Helper()
	l, err := sdktest.LoadLlama3()
	if err != nil {
		tb.Fatal(err)
	}
	return l
}

// patterns are expressions whose replies the tests check, with whether
// a reply can go on for ever (then the sampler favours the end token).
var patterns = []struct {
	expr      string
	unbounded bool
}{
	{`[0-9]{3}-[0-9]{4}`, false},
	{`(yes|no|maybe)`, false},
	{`[A-Z][a-z]{1,8}( [a-z]{1,8}){0,5}\.`, false},
	{`-?\d{1,6}(\.\d{1,3})?`, false},
	{`(?i)hello, world!?`, false},
	{`[a-zé]{1,8}`, false},
	{`\w{1,10}@\w{1,10}\.(com|org)`, false},
	{`\bfoo\b[ a-z]{0,20}`, false},
	{`(?m)^ab$\n^c+$`, true},
	{`\p{Greek}{2,5}`, false},
	{`.{0,12}`, false},
	{`日本語|中文|한국어`, false},
	{`\{"a": [0-9]{1,3}\}`, false},
	{`x*`, true},
	{`[^a-z]{1,6}`, false},
	{`(?s).+`, true},
}

func TestRepliesMatch(t *testing.T) {
	l := llama(t)
	seeds := 40
	if testing.Short() {
		seeds = 8
	}
	for _, p := range patterns {
		re := regexp.MustCompile(`^(?:` + p.expr + `)$`)
		h := l.Host()
		s, err := sdktest.NewSession(New(), p.expr, l.Vocab, h)
		if err != nil {
			t.Fatal(err)
		}
		ends := map[string]int{}
		for seed := range seeds {
			opt := sdktest.Options{Seed: uint64(seed), MaxTokens: 400}
			if p.unbounded {
				opt.EndBias = 0.3
			}
			rep, err := s.Reply(opt)
			if err != nil {
				t.Fatalf("%q seed %d: %v", p.expr, seed, err)
			}
			ends[rep.End]++
			if rep.End != sdktest.EndStop && rep.End != sdktest.EndToken {
				t.Errorf("%q seed %d: reply %q ended by %s", p.expr, seed, rep.Text, rep.End)
				continue
			}
			if !utf8.Valid(rep.Text) || !re.Match(rep.Text) {
				t.Errorf("%q seed %d: reply %q does not match", p.expr, seed, rep.Text)
			}
		}
		if len(h.Logs) > 0 {
			t.Errorf("%q: unexpected log lines %q", p.expr, h.Logs)
		}
		t.Logf("%-32q ends %v", p.expr, ends)
	}
}

func TestStopAndForce(t *testing.T) {
	l := llama(t)
	rep, err := sdktest.Run(New(), `hello world, this is fixed`, l.Vocab, l.Host(), sdktest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if string(rep.Text) != "hello world, this is fixed" || rep.End != sdktest.EndStop || rep.Forced != len(rep.Tokens) {
		t.Fatalf("reply %q ended by %s with %d of %d tokens forced", rep.Text, rep.End, rep.Forced, len(rep.Tokens))
	}
	if want := l.Tokenizer.Encode(string(rep.Text)); len(rep.Tokens) != len(want) {
		t.Errorf("forced %v, the tokenizer gives %v", rep.Tokens, want)
	}
}

func TestTakesBackBadPrefix(t *testing.T) {
	l := llama(t)
	h := l.Host()
	prefix := l.Tokenizer.Encode("12-ab")
	rep, err := sdktest.Run(New(), `[0-9]{1,4}-[0-9]{1,4}`, l.Vocab, h, sdktest.Options{Prefix: prefix, EndBias: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Back == 0 || !regexp.MustCompile(`^[0-9]{1,4}-[0-9]{1,4}$`).Match(rep.Text) {
		t.Fatalf("reply %q after prefix %q, %d taken back", rep.Text, "12-ab", rep.Back)
	}
	if len(h.Logs) != 1 {
		t.Errorf("log %q", h.Logs)
	}
}

func TestBadExpression(t *testing.T) {
	l := llama(t)
	if _, err := sdktest.Run(New(), `a(b`, l.Vocab, l.Host(), sdktest.Options{}); err == nil {
		t.Fatal("a(b compiled")
	}
}

// TestAgainstRegexp compares whole-text matching of the DFA with Go's
// regexp on chosen and random texts.
func TestAgainstRegexp(t *testing.T) {
	exprs := []string{
		`a*b+c?`, `(ab|a)(bc|c)`, `[^x]{2}`, `(?i)straße`, `\bab\b|ba`, `(?m)^a$|^$`,
		`é+|e\x{301}`, `[α-ω]+`, `a{2,3}|.`, `\A(a|b)*\z`, `(?s)a.b`, `(?U)a+?b`, `.\B.`,
	}
	alphabet := []string{"a", "b", "c", "x", "é", "e", "\u0301", "α", "ω", "\n", " ", "ß", "SS", "ss", "\xff", "\xc3"}
	fixed := []string{"", "straße", "STRAẞE", "Straße", "strasse", "a\nb", "axb", "aab", "ab", "a b", "ab ", " x", "x ", "éé", "e\u0301", "αω", "aaa", "abc"}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, expr := range exprs {
		d, err := Compile(expr)
		if err != nil {
			t.Fatal(err)
		}
		re := regexp.MustCompile(`^(?:` + expr + `)$`)
		texts := fixed
		for range 3000 {
			var text string
			for range rng.IntN(5) {
				text += alphabet[rng.IntN(len(alphabet))]
			}
			texts = append(texts, text)
		}
		matches := 0
		for _, text := range texts {
			s, ok := d.Start(), true
			for _, b := range []byte(text) {
				if s, ok = d.Next(s, b); !ok {
					break
				}
			}
			got := ok && d.Accepts(s)
			if want := utf8.ValidString(text) && re.MatchString(text); got != want {
				t.Errorf("%q on %q: DFA %v, regexp %v", expr, text, got, want)
			}
			if got {
				matches++
			}
		}
		if matches == 0 {
			t.Errorf("%q matched no text", expr)
		}
	}
}

func TestFlush(t *testing.T) {
	d, err := Compile(`[ab]*a[ab]{6}`)
	if err != nil {
		t.Fatal(err)
	}
	d.limit = 8
	re := regexp.MustCompile(`^[ab]*a[ab]{6}$`)
	rng := rand.New(rand.NewPCG(3, 4))
	for range 500 {
		text := make([]byte, 7+rng.IntN(8))
		for i := range text {
			text[i] = "ab"[rng.IntN(2)]
		}
		s := d.Start()
		for _, b := range text {
			s, _ = d.Next(s, b)
		}
		if d.Accepts(s) != re.Match(text) {
			t.Fatalf("%q: DFA %v", text, d.Accepts(s))
		}
	}
	if d.States() > 8 {
		t.Errorf("%d states kept, limit 8", d.States())
	}
}

// TestWalkTrieBulk checks the masks of WalkTrie, which allows whole
// subtrees where a state loops on their bytes, against running the DFA
// over every token of the Llama 3 vocabulary.
func TestWalkTrieBulk(t *testing.T) {
	l := llama(t)
	v := l.Vocab
	trie := v.Trie()
	for _, c := range []struct{ expr, prefix string }{
		{`[A-Z][a-z]+( [a-z]+){3,12}\.`, "Hello w"},
		{`(?s).*`, "é"},
		{`[^"\\]*"`, ""},
		{`[a-z ]*x{2}`, "ab"},
		{`\p{Greek}+ ok`, "α"},
	} {
		d, err := Compile(c.expr)
		if err != nil {
			t.Fatal(err)
		}
		s := d.Start()
		for _, b := range []byte(c.prefix) {
			var ok bool
			if s, ok = d.Next(s, b); !ok {
				t.Fatalf("%q rejects %q", c.expr, c.prefix)
			}
		}
		m := sdk.NewMask(v.Len())
		d.WalkTrie(trie, s, m, nil)
		for id := range int32(v.Len()) {
			tok := v.Token(id)
			want := len(tok) > 0 && !v.IsSpecial(id)
			for st, i := s, 0; want && i < len(tok); i++ {
				st, want = d.Next(st, tok[i])
			}
			if m.Allowed(id) != want {
				t.Fatalf("%q after %q: token %d %q allowed %v, want %v", c.expr, c.prefix, id, tok, m.Allowed(id), want)
			}
		}
	}
}
