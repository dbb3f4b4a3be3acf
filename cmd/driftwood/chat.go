package main

import (
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
	"github.com/driftwoodlabs/driftwood/sessions"
	"github.com/driftwoodlabs/driftwood/tui"
)

// cmdChat runs the chat: "driftwood [--model M] [--continue | --session
// NAME] [flags]".
func cmdChat(ctx context.Context, args []string, out, errOut io.Writer) error {
	opt, err := parseChatFlags(args, errOut)
	if err != nil {
		return err
	}
	if f, ok := out.(*os.File); !ok || !term.IsTerminal(f.Fd()) {
		return errors.New("the chat needs a terminal; in scripts use: driftwood run --chat --prompt TEXT")
	}
	opt.Output = out
	return tui.Run(ctx, opt)
}

// parseChatFlags reads the chat's flags and the config file.
func parseChatFlags(args []string, errOut io.Writer) (tui.Options, error) {
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
	fs.Usage = func() {
		fmt.Fprintln(errOut, "usage: driftwood [flags]   (the chat; 'driftwood help' lists the other commands)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return tui.Options{}, err
	}
	if fs.NArg() > 0 {
		return tui.Options{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *cont && *session != "" {
		return tui.Options{}, errors.New("give --continue or --session NAME, not both")
	}
	cfg, err := config.Load(*configPath)
	if err != nil {
		return tui.Options{}, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	pick(set, "backend", backend, cfg.Backend)
	pick(set, "mlx-lib", mlxLib, cfg.MLXLibrary)
	pick(set, "kv-type", kvType, cfg.KVType)
	if err := validBackend(*backend); err != nil {
		return tui.Options{}, err
	}
	if _, err := engine.ParseKVType(*kvType); err != nil {
		return tui.Options{}, fmt.Errorf("--kv-type: %w", err)
	}
	store := sessions.Store{Dir: *sessionsDir}
	if set["session"] {
		if _, err := store.Path(*session); err != nil {
			return tui.Options{}, err
		}
	}
	notes := &noteBox{}
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
		NewBackend:  selectBackend(*backend, backends.Options{Threads: cfg.Threads, MLXLibrary: *mlxLib, MLXSampling: cfg.MLXSampling, KVType: engine.KVType(*kvType)}, notes),
		BackendNote: notes.take,
	}, nil
}
