package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/charmbracelet/x/term"

	"github.com/driftwoodlabs/driftwood/backends"
	"github.com/driftwoodlabs/driftwood/chatopen"
	"github.com/driftwoodlabs/driftwood/config"
	"github.com/driftwoodlabs/driftwood/controllers"
	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/cpu"
	"github.com/driftwoodlabs/driftwood/sessions"
	"github.com/driftwoodlabs/driftwood/tui"
)

// cmdChat runs the chat: "driftwood [--model M] [--continue | --session
// NAME] [flags]".
func cmdChat(ctx context.Context, args []string, out, errOut io.Writer) error {
	opt, cr, err := parseChatFlags(args, errOut)
	if err != nil {
		return err
	}
	if f, ok := out.(*os.File); !ok || !term.IsTerminal(f.Fd()) {
		return errors.New("the chat needs a terminal; in scripts use: driftwood run --chat --prompt TEXT")
	}
	if cr.flags.active() {
		finish, err := cr.join(&opt, errOut)
		if err != nil {
			return err
		}
		defer func() {
			if err := finish(); err != nil {
				fmt.Fprintf(errOut, "driftwood: %v\n", err)
			}
		}()
	}
	opt.Output = out
	return tui.Run(ctx, opt)
}

// parseChatFlags reads the chat's flags and the config file.
func parseChatFlags(args []string, errOut io.Writer) (tui.Options, chatRanks, error) {
	fs := flag.NewFlagSet("driftwood", flag.ContinueOnError)
	fs.SetOutput(errOut)
	model := fs.String("model", "", "model folder or Hugging Face repo id (default: a resumed session's own model, else the config's, else a picker)")
	cont := fs.Bool("continue", false, "resume the latest session")
	session := fs.String("session", "", "resume session `NAME`, or start it")
	configPath := fs.String("config", config.Path(), "configuration file")
	controllersDir := folderFlag(fs, "controllers-dir", controllers.DefaultDir(), "controllers folder")
	sessionsDir := folderFlag(fs, "sessions-dir", sessions.DefaultDir(), "sessions folder")
	noHistory := fs.Bool("no-history", false, "neither read nor write the input history")
	backend := fs.String("backend", "", backends.Choices()+" (default: the config's, else auto)")
	mlxLib := fs.String("mlx-lib", "", "libmlxc path (default: the config's, $DRIFTWOOD_MLXC, the usual places)")
	kvType := fs.String("kv-type", "", kvTypeUsage+" (default: the config's, else f16)")
	var cr chatRanks
	cr.flags.register(fs)
	fs.Usage = func() {
		fmt.Fprintln(errOut, "usage: driftwood [flags]   (the chat; 'driftwood help' lists the other commands)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return tui.Options{}, cr, err
	}
	if fs.NArg() > 0 {
		return tui.Options{}, cr, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *cont && *session != "" {
		return tui.Options{}, cr, errors.New("give --continue or --session NAME, not both")
	}
	cfg, err := config.Load(*configPath)
	if err != nil {
		return tui.Options{}, cr, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	pick(set, "backend", backend, cfg.Backend)
	pick(set, "mlx-lib", mlxLib, cfg.MLXLibrary)
	pick(set, "kv-type", kvType, cfg.KVType)
	if err := validBackend(*backend); err != nil {
		return tui.Options{}, cr, err
	}
	if _, err := engine.ParseKVType(*kvType); err != nil {
		return tui.Options{}, cr, fmt.Errorf("--kv-type: %w", err)
	}
	store := sessions.Store{Dir: *sessionsDir}
	if set["session"] {
		if _, err := store.Path(*session); err != nil {
			return tui.Options{}, cr, err
		}
	}
	notes := &noteBox{}
	bopt := backends.Options{Threads: cfg.Threads, MLXLibrary: *mlxLib, MLXSampling: cfg.MLXSampling, KVType: engine.KVType(*kvType), CPUTuningCache: cpu.DefaultTuningCache()}
	cr.model, cr.backend, cr.opt, cr.notes = rankModel{cmp.Or(*model, cfg.Model), *mlxLib, *kvType, *configPath}, *backend, bopt, notes
	return tui.Options{
		Model:          *model,
		Config:         cfg,
		ConfigPath:     *configPath,
		Session:        *session,
		Continue:       *cont,
		Sessions:       store,
		ControllerDirs: []string{*controllersDir},
		CompileCache:   controllers.DefaultCacheDir(),
		NoHistory:      *noHistory || cfg.NoHistory,
		Prefixes:       cfg.Prefixes(),
		TokenizerCache: chatopen.DefaultTokenizerCache(),
		// The status bar names the backend; a fallback note must not
		// draw over the screen: the chat shows it in its status area.
		NewBackend:  selectBackend(*backend, bopt, notes),
		BackendNote: notes.take,
	}, cr, nil
}

// chatRanks is the chat's split-model flags and what joining needs.
type chatRanks struct {
	flags   rankFlags
	model   rankModel
	backend string
	opt     backends.Options
	notes   *noteBox
}

// join makes the chat rank 0 of its model split across ranks: the
// chat opens that model (a session of another is refused at load: the
// ranks compare their models), on MLX, over the group, and a save after
// a lost rank computes the state again on the CPU. finish is for when
// the chat has ended.
func (cr *chatRanks) join(opt *tui.Options, errOut io.Writer) (finish func() error, err error) {
	group, finish, err := cr.flags.join(cr.model, &cr.backend, errOut)
	if err != nil {
		return nil, err
	}
	cr.opt.MLXGroup = group
	opt.Model = cr.model.model
	opt.NewBackend = selectBackend(cr.backend, cr.opt, cr.notes)
	opt.Rebuild = func(m *engine.Model) func([]int32, int) (*engine.KVState, error) {
		return rebuildOnCPU(m, cr.opt.KVType, io.Discard)
	}
	return finish, nil
}
