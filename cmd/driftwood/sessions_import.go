package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/driftwoodlabs/driftwood/chatopen"
	"github.com/driftwoodlabs/driftwood/config"
	"github.com/driftwoodlabs/driftwood/conversation"
	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/chat"
	"github.com/driftwoodlabs/driftwood/engine/cpu"
	"github.com/driftwoodlabs/driftwood/sessions"
)

// importFlags are the flags of `driftwood sessions import`.
type importFlags struct {
	model, name, config string
	threads             int
}

// importSession implements "driftwood sessions import FILE": it makes a
// session of a prompt cache that mlx-lm saved (mlx_lm.cache_prompt,
// save_prompt_cache), which holds a model's state but not the token ids
// it stands for. The ids are read back from the state on the CPU
// (cpu.Backend.RecoverTokens); the session keeps the state as mlx-lm
// stored it, and one user message holding the tokens' text
// (conversation.ImportedSession), so that it continues where mlx-lm left
// off without processing it again.
func importSession(ctx context.Context, store sessions.Store, file string, f importFlags, out, errOut io.Writer) error {
	pc, err := sessions.OpenPromptCache(file)
	if err != nil {
		return err
	}
	defer pc.Close()
	if _, ok := pc.Metadata["driftwood"]; ok {
		return fmt.Errorf("%s is a Driftwood session already: copy it into %s as NAME.safetensors to continue it as session NAME", file, store.Dir)
	}
	name := f.name
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	}
	if _, err := store.Path(name); err != nil {
		return fmt.Errorf("%w: give the session a name with --name", err)
	}
	model := f.model
	if model == "" {
		if model = pc.Metadata["model"]; model == "" {
			return fmt.Errorf("%s does not name the model it was made with: give --model", file)
		}
		fmt.Fprintf(errOut, "%s: its model, %s\n", file, model)
	}
	cfg, err := config.Load(f.config)
	if err != nil {
		return err
	}
	claim, err := store.Claim(name)
	if err != nil {
		return err
	}
	defer claim.Release()
	if claim.Exists() {
		return fmt.Errorf("session %q exists already: give another --name, or remove it first (driftwood sessions rm %s)", name, name)
	}
	// The CPU backend reads the ids back, whatever backend chats later.
	l, err := chatopen.Open(ctx, model, chatopen.Options{Threads: f.threads, Progress: errOut, TokenizerCache: chatopen.DefaultTokenizerCache(),
		Note:       func(s string) { fmt.Fprintln(errOut, "note: "+s) },
		NewBackend: func(m *engine.Model) (engine.Backend, error) { return cpu.New(m, cpu.Options{Threads: f.threads}) }})
	if err != nil {
		return err
	}
	defer l.Close()
	if err := l.CanChat(); err != nil {
		return err
	}
	mc := l.Weights.Config
	if err := mc.ValidateKV(pc.KV, mc.Window(0)); err != nil {
		return fmt.Errorf("%s does not fit %s: %w", file, l.Describe(), err)
	}
	start := time.Now()
	rec, err := l.Backend.(*cpu.Backend).RecoverTokens(pc.KV, likelyTokens(l))
	if err != nil {
		return fmt.Errorf("%s: its tokens cannot be read back on %s: %w", file, l.Describe(), err)
	}
	took := time.Since(start)
	created := time.Now()
	if st, err := os.Stat(file); err == nil {
		created = st.ModTime() // the day a template that prints the date rendered it
	}
	rt := conversation.Runtime{Label: l.Describe(), Source: l.Source, Weights: l.Weights, Tok: l.Tok, Template: l.Template}
	if err := claim.Save(conversation.ImportedSession(rt, rec.IDs, created, cfg.Sampling), pc.KV); err != nil {
		return err
	}
	fmt.Fprintf(out, "imported %s as session %s, on %s\n", file, name, l.Describe())
	fmt.Fprintf(out, "  %d tokens read back from the model's state in %s (the farthest %.1f%% of its values' size from its token's%s)\n",
		len(rec.IDs), took.Round(time.Millisecond), 100*rec.Dist, decided(rec))
	fmt.Fprintf(out, "  its KV cache kept as mlx-lm saved it (%s)\n", kvForm(pc.KV))
	fmt.Fprintf(out, "  the model holds: %s\n", quoteStart(l.Tok.Decode(rec.IDs), 120))
	fmt.Fprintf(out, "continue it: driftwood --session %s, or driftwood run --session %s --prompt TEXT\n", name, name)
	return nil
}

// decided says which positions the first layer's values did not decide.
func decided(rec *cpu.Recovered) string {
	var s []string
	if n := len(rec.Replayed); n > 0 {
		s = append(s, fmt.Sprintf("%d decided by running the model on the nearest tokens", n))
	}
	if n := len(rec.Likely); n > 0 {
		s = append(s, fmt.Sprintf("%d taken as the chat template's tokens, which the state could not tell from others", n))
	}
	if len(s) == 0 {
		return ""
	}
	return "; " + strings.Join(s, "; ")
}

// kvForm describes a KV state's element type.
func kvForm(kv *engine.KVState) string {
	if q := kv.Quant; q != nil {
		return fmt.Sprintf("%d-bit codes in groups of %d, %s scales", q.Bits, q.Group, strings.ToLower(string(q.ScaleDType)))
	}
	return strings.ToLower(string(kv.DType))
}

// quoteStart quotes the first n characters of s (and says how long it is
// when it is cut).
func quoteStart(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q… (%d characters)", string(r[:n]), len(r))
}

// likelyTokens are the special tokens the model's chat template and
// tokenizer write (BOS, the turns' markers, ends of turn): where a model
// state does not tell a token from others, one of these is the likelier
// (a 4-bit cache blurs a trained model's rarely seen tokens, its special
// ones among them, into their neighbours).
func likelyTokens(l *chatopen.Loaded) []int32 {
	ids := slices.Concat(l.Tok.AddSpecialTokens(nil), l.StopTokens())
	for _, msgs := range [][]chat.Message{
		{{Role: "system", Content: "s"}, {Role: "user", Content: "u"}, {Role: "assistant", Content: "a"}, {Role: "user", Content: "u"}},
		{{Role: "user", Content: "u"}, {Role: "assistant", Content: "a"}, {Role: "user", Content: "u"}},
	} {
		if r, err := l.Template.Encode(l.Tok, msgs, chat.Options{AddGenerationPrompt: true}); err == nil {
			ids = append(ids, r...)
		}
	}
	var out []int32
	for _, id := range ids {
		if l.Tok.IsSpecial(id) && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// errImportFlags is the error for import's flags given to another verb.
var errImportFlags = errors.New("--model, --name, --threads and --config are import's flags")
