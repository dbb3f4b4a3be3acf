package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/driftwoodlabs/driftwood/backends"
	"github.com/driftwoodlabs/driftwood/chatopen"
	"github.com/driftwoodlabs/driftwood/chatsession"
	"github.com/driftwoodlabs/driftwood/config"
	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/cpu"
	"github.com/driftwoodlabs/driftwood/mlxbridge"
	"github.com/driftwoodlabs/driftwood/sessions"
)

// genFlags are the settings shared by commands that generate: the config
// file's values, overridden by flags given on the command line.
type genFlags struct {
	fs          *flag.FlagSet
	configPath  string
	cfg         config.Config
	model       string
	backend     string
	mlxLib      string
	mlxSampling string           // the config's; no flag
	group       *mlxbridge.Group // the ranks the model is split across, when it is
	threads     int
	kvType      string
	context     int
	maxTokens   int
	sampling    engine.SamplerConfig
	set         map[string]bool // flags given on the command line
}

func newGenFlags(name string, errOut io.Writer) *genFlags {
	g := &genFlags{fs: flag.NewFlagSet("driftwood "+name, flag.ContinueOnError), cfg: config.Default()}
	g.fs.SetOutput(errOut)
	d := g.cfg
	g.fs.Usage = func() {
		fmt.Fprintf(g.fs.Output(), "usage: driftwood %s [flags]\n", name)
		g.fs.PrintDefaults()
	}
	g.fs.StringVar(&g.configPath, "config", config.Path(), "configuration file")
	g.fs.StringVar(&g.model, "model", d.Model, "model folder or Hugging Face repo id (downloaded first when not cached)")
	g.fs.IntVar(&g.threads, "threads", d.Threads, "CPU threads (0: one per physical core)")
	g.fs.StringVar(&g.backend, "backend", d.Backend, "cpu, mlx or auto (MLX when libmlxc loads and has a GPU)")
	g.fs.StringVar(&g.mlxLib, "mlx-lib", d.MLXLibrary, "libmlxc path (default: $DRIFTWOOD_MLXC, then the usual places)")
	g.fs.IntVar(&g.context, "context", d.Context, "context window in tokens")
	g.fs.StringVar(&g.kvType, "kv-type", d.KVType, kvTypeUsage+" (default f16)")
	g.fs.IntVar(&g.maxTokens, "max-tokens", d.MaxTokens, "longest reply in tokens (0: until the model stops)")
	s := &g.sampling
	g.fs.Float64Var(&s.Temperature, "temp", d.Sampling.Temperature, "sampling temperature (0: greedy)")
	g.fs.Float64Var(&s.TopP, "top-p", d.Sampling.TopP, "nucleus sampling mass (1: off)")
	g.fs.IntVar(&s.TopK, "top-k", d.Sampling.TopK, "sample among the K likeliest tokens (0: off)")
	g.fs.Float64Var(&s.MinP, "min-p", d.Sampling.MinP, "drop tokens below this fraction of the likeliest (0: off)")
	g.fs.Float64Var(&s.RepeatPenalty, "repeat-penalty", d.Sampling.RepeatPenalty, "penalty for recent tokens (1: off)")
	g.fs.IntVar(&s.RepeatLastN, "repeat-last-n", d.Sampling.RepeatLastN, "how many recent tokens the penalty sees")
	g.fs.Uint64Var(&s.Seed, "seed", d.Sampling.Seed, "random seed (0: a fresh one each reply; --json's stats give the one used)")
	return g
}

// pick sets *flagV to the config's value unless flag name was given on
// the command line; the types must agree, so a new setting cannot be
// skipped silently.
func pick[T any](set map[string]bool, name string, flagV *T, cfgV T) {
	if !set[name] {
		*flagV = cfgV
	}
}

// parse reads the flags, then the config file, and lets every flag given
// on the command line override the file.
func (g *genFlags) parse(args []string) error {
	if err := g.fs.Parse(args); err != nil {
		return err
	}
	if g.fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", g.fs.Arg(0))
	}
	cfg, err := config.Load(g.configPath)
	if err != nil {
		return err
	}
	set := map[string]bool{}
	g.fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	g.set = set
	pick(set, "model", &g.model, cfg.Model)
	pick(set, "threads", &g.threads, cfg.Threads)
	pick(set, "backend", &g.backend, cfg.Backend)
	pick(set, "mlx-lib", &g.mlxLib, cfg.MLXLibrary)
	g.mlxSampling = cfg.MLXSampling
	pick(set, "context", &g.context, cfg.Context)
	pick(set, "kv-type", &g.kvType, cfg.KVType)
	pick(set, "max-tokens", &g.maxTokens, cfg.MaxTokens)
	s, c := &g.sampling, cfg.Sampling
	pick(set, "temp", &s.Temperature, c.Temperature)
	pick(set, "top-p", &s.TopP, c.TopP)
	pick(set, "top-k", &s.TopK, c.TopK)
	pick(set, "min-p", &s.MinP, c.MinP)
	pick(set, "repeat-penalty", &s.RepeatPenalty, c.RepeatPenalty)
	pick(set, "repeat-last-n", &s.RepeatLastN, c.RepeatLastN)
	pick(set, "seed", &s.Seed, c.Seed)
	g.cfg = cfg
	if err := validBackend(g.backend); err != nil {
		return err
	}
	if err := config.CheckContext(g.context); err != nil {
		return fmt.Errorf("--context %d: %w", g.context, err)
	}
	if err := cpu.CheckThreads(g.threads); err != nil {
		return fmt.Errorf("--threads %d: %w", g.threads, err)
	}
	if _, err := engine.ParseKVType(g.kvType); err != nil {
		return fmt.Errorf("--kv-type: %w", err)
	}
	return s.Validate()
}

// needModel is the error for a command given no model.
func (g *genFlags) needModel() error {
	if g.model == "" {
		return errors.New("no model: give --model DIR (or set model in " + g.configPath + ")")
	}
	return nil
}

// openOptions says how to open the model the flags name.
func (g *genFlags) openOptions(errOut io.Writer) chatopen.Options {
	return chatopen.Options{Threads: g.threads, Progress: errOut, NewBackend: selectBackend(g.backend, g.backendOptions(), errOut),
		TokenizerCache: chatopen.DefaultTokenizerCache(), Note: func(s string) { fmt.Fprintln(errOut, "note: "+s) }}
}

// backendOptions are the flags' settings for the backends.
func (g *genFlags) backendOptions() backends.Options {
	return backends.Options{Threads: g.threads, MLXLibrary: g.mlxLib, MLXSampling: g.mlxSampling, MLXGroup: g.group, KVType: engine.KVType(g.kvType), CPUTuningCache: cpu.DefaultTuningCache()}
}

// kvTypeUsage describes the --kv-type flag.
const kvTypeUsage = "KV cache type: f16, bf16, q8_0 (half f16's memory) or f32 (the reference)"

// samplingSet reports whether any sampling flag was given.
func (g *genFlags) samplingSet() bool {
	for _, f := range []string{"temp", "top-p", "top-k", "min-p", "repeat-penalty", "repeat-last-n", "seed"} {
		if g.set[f] {
			return true
		}
	}
	return false
}

func cmdRun(ctx context.Context, args []string, out, errOut io.Writer) error {
	g := newGenFlags("run", errOut)
	prompt := g.fs.String("prompt", "", "prompt text")
	promptIDs := g.fs.String("prompt-ids", "", "prompt as comma-separated token ids (used as given, no BOS added)")
	useChat := g.fs.Bool("chat", false, "wrap the prompt in the model's chat template")
	system := g.fs.String("system", "", "system prompt (with --chat or a new session)")
	asJSON := g.fs.Bool("json", false, "print one JSON object per token and a final stats object (with controller_error when the controller was refused or switched off: exit status 3)")
	ignoreEOS := g.fs.Bool("ignore-eos", false, "keep generating past end-of-turn tokens")
	session := g.fs.String("session", "", "continue (or start) the named session: restore it, add the prompt, reply, save")
	cont := g.fs.Bool("continue", false, "continue the most recent session")
	sessionsDir := folderFlag(g.fs, "sessions-dir", sessions.DefaultDir(), "sessions folder")
	thinkFlag := g.fs.Bool("think", false, "with --chat or a session: --think=false asks a model whose template reads enable_thinking (Qwen3) to answer without thinking first; --think asks it to think (default: the session's setting, else the template's)")
	var cf controllerFlags
	cf.register(g.fs)
	var rf rankFlags
	rf.register(g.fs)
	if err := g.parse(args); err != nil {
		return err
	}
	if g.set["session"] && *session == "" {
		return errors.New("--session needs a name (letters, digits, '.', '_' and '-')")
	}
	inSession := *session != "" || *cont
	if (*prompt == "") == (*promptIDs == "") || (inSession && *prompt == "") {
		return errors.New("give exactly one of --prompt TEXT and --prompt-ids 1,2,3 (a session needs --prompt)")
	}
	var think *bool
	if g.set["think"] {
		if !*useChat && !inSession {
			return errors.New("--think needs --chat or a session: it is the chat template's enable_thinking")
		}
		think = thinkFlag
	}
	store := sessions.Store{Dir: *sessionsDir}
	var target chatsession.Target
	if inSession {
		var err error
		if target, err = findSession(g, store, *session, *cont, errOut); err != nil {
			return err
		}
	}
	if err := g.needModel(); err != nil {
		return err
	}
	if rf.active() {
		group, wait, err := rf.join(rankModel{g.model, g.mlxLib, g.kvType, g.configPath}, &g.backend, errOut)
		if err != nil {
			return err
		}
		g.group = group
		defer func() {
			if werr := wait(); werr != nil {
				fmt.Fprintf(errOut, "driftwood run: %v\n", werr)
			}
		}()
	}
	l, err := chatopen.Open(ctx, g.model, g.openOptions(errOut))
	if _, fromSession := target.Model(); err != nil && fromSession && !g.set["model"] {
		return target.ModelMissing(err)
	}
	if err != nil {
		return err
	}
	defer l.Close()
	if g.group != nil {
		l.Rebuild = rebuildOnCPU(l.Weights, engine.KVType(g.kvType), errOut)
	}
	if think != nil && (l.Template == nil || !l.Template.SwitchesThinking()) {
		return fmt.Errorf("--think: the chat template of %s has no thinking switch (enable_thinking), so the flag would change nothing", g.model)
	}
	if *system == "" {
		*system = g.cfg.System
	}
	var cs *controllerSet
	if cf.name != "" || (inSession && l.Tok != nil) {
		if cs, err = newControllerSet(l, cf.dir, errOut); err != nil {
			return err
		}
		defer cs.Close()
		if cf.name != "" {
			if err := cs.use(cf.name, cf.arg); err != nil {
				return err
			}
		}
	}
	p := newPrinter(l, out, *asJSON, cs)
	var st engine.Stats
	switch {
	case inSession:
		st, err = runSession(ctx, sessionRun{g: g, l: l, cs: cs, cf: cf, store: store, name: target.Name, prompt: *prompt, system: *system, ignoreEOS: *ignoreEOS, think: think}, p, errOut)
	case *useChat && *promptIDs == "":
		st, err = runChat(ctx, chatRun{g: g, l: l, cs: cs, prompt: *prompt, system: *system, ignoreEOS: *ignoreEOS, think: think}, p, errOut)
	default:
		st, err = runRaw(ctx, g, l, cs, *prompt, *promptIDs, *ignoreEOS, p)
	}
	if errors.Is(err, context.Canceled) {
		err = nil // Ctrl-C stops the reply; what was produced stays printed
	}
	var full *engine.ContextFullError
	if errors.As(err, &full) {
		most := ""
		if n := l.Window(0); n > 0 {
			most = fmt.Sprintf(" (this model takes up to %d tokens)", n)
		}
		return fmt.Errorf("%w: give a larger --context%s, a shorter prompt or a lower --max-tokens", err, most)
	}
	if err != nil {
		return err
	}
	fail := cs.failure()
	if err := printStats(out, errOut, *asJSON, st, l, fail, p.text()); err != nil {
		return err
	}
	if fail != nil {
		return fail // the reply is printed; the exit status tells scripts
	}
	return nil
}

// runRaw replies to a prompt given as text (with the tokenizer's special
// tokens around it, no chat template) or as token ids.
func runRaw(ctx context.Context, g *genFlags, l *chatopen.Loaded, cs *controllerSet, text, idList string, ignoreEOS bool, p *printer) (engine.Stats, error) {
	ids, err := promptTokens(l, text, idList)
	if err != nil {
		return engine.Stats{}, err
	}
	cache, err := l.Backend.NewCache(l.Window(g.context))
	if err != nil {
		return engine.Stats{}, err
	}
	defer cache.Close()
	gen := l.Generator(g.sampling, g.maxTokens)
	if ignoreEOS {
		gen.StopTokens = nil
	}
	if cs != nil {
		gen.Hook = cs.Host
	}
	st, err := gen.Generate(ctx, &engine.Sequence{Cache: cache}, ids, p.event)
	p.flush()
	return st, err
}

// promptTokens turns the prompt flags of a reply without the chat
// template into token ids.
func promptTokens(l *chatopen.Loaded, text, idList string) ([]int32, error) {
	if idList != "" {
		return parseIDs(idList, l.Weights.Config.VocabSize)
	}
	if err := l.NeedTokenizer(); err != nil {
		return nil, err
	}
	// The special tokens the tokenizer's post-processor puts around a
	// text (Llama's and Mistral's BOS, none for Qwen), as Hugging Face
	// tokenizers do, not config.json's bos_token_id, which Qwen sets
	// without using it.
	return l.Tok.AddSpecialTokens(l.Tok.Encode(text)), nil
}

func parseIDs(list string, vocab int) ([]int32, error) {
	var ids []int32
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.ParseInt(strings.TrimSpace(f), 10, 32)
		if err != nil || n < 0 || int(n) >= vocab {
			return nil, fmt.Errorf("--prompt-ids: %q is not a token id in [0, %d)", f, vocab)
		}
		ids = append(ids, int32(n))
	}
	return ids, nil
}
