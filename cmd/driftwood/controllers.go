package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"text/tabwriter"

	"github.com/driftwoodlabs/driftwood/chatopen"
	"github.com/driftwoodlabs/driftwood/controllers"
	_ "github.com/driftwoodlabs/driftwood/controllers/shipped" // regex, json, choice, ban, maxwords
)

// cmdControllers implements "driftwood controllers [list|build]".
func cmdControllers(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := flag.NewFlagSet("driftwood controllers", flag.ContinueOnError)
	fs.SetOutput(errOut)
	dir := folderFlag(fs, "controllers-dir", controllers.DefaultDir(), "controllers folder", "dir")
	src := fs.String("src", filepath.Join("controllers", "examples"), "with build: the source folder, one folder with a main package each (the default is in a clone of the repository)")
	fs.Usage = func() {
		fmt.Fprintln(errOut, "usage: driftwood controllers [list|build] [flags]")
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	verb := "list"
	if len(pos) == 1 {
		verb = pos[0]
	} else if len(pos) > 1 {
		return fmt.Errorf("unexpected argument %q", pos[1])
	}
	switch verb {
	case "list":
		// The disk cache spares the compile that describing a module
		// needs (after the first listing, or a first use).
		h, err := controllers.NewHost(nil, 0, controllers.HostOptions{Dirs: []string{*dir}, CacheDir: controllers.DefaultCacheDir(), ListOnly: true})
		if err != nil {
			return err
		}
		defer h.Close()
		listControllers(out, h, *dir)
		return nil
	case "build":
		files, err := controllers.Build(*src, *dir)
		for _, f := range files {
			fmt.Fprintln(out, f)
		}
		return err
	}
	return fmt.Errorf("unknown verb %q (want list or build)", verb)
}

// listControllers prints every controller of h: for each name, the one
// used and below it those it overrides, each with the argument it takes.
func listControllers(out io.Writer, h *controllers.Host, dir string) {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tUSED\tFROM\tARGUMENT")
	for _, e := range h.AllControllers() {
		used, from := "yes", e.Source()
		if !e.Used {
			used, from = "no", from+", overridden by the "+e.Name+" above"
		}
		arg, _ := h.Argument(e)
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", e.Name, used, from, arg)
	}
	w.Flush()
	fmt.Fprintf(out, "A NAME.wasm or NAME.wat in %s is used instead of the shipped NAME.\n", dir)
}

// controllerFlags are the flags that pick a controller for a reply.
type controllerFlags struct {
	name, arg, dir string
}

func (c *controllerFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.name, "controller", "", "controller name (shipped, or a file in --controllers-dir, which overrides a shipped one) or .wasm/.wat path")
	fs.Func("controller-arg", "the controller's argument (a regex, a JSON schema, a JSON list...); @FILE reads it from FILE, @@ stands for a leading @", func(v string) error {
		var err error
		c.arg, err = controllers.ReadArg(v)
		return err
	})
	fs.StringVar(&c.dir, "controllers-dir", controllers.DefaultDir(), "controllers folder")
}

// controllerSet is a running controller host for one model.
type controllerSet struct {
	*controllers.Host

	errOut io.Writer
	mu     sync.Mutex
	fault  *controllers.Log // the first refusal or fault, nil when none
	held   []string         // log lines held while holding (holdLogs)
	hold   bool
}

// newControllerSet starts the controller host for m; log lines and faults
// go to errOut, each line prefixed with the controller's name.
func newControllerSet(m *chatopen.Loaded, dir string, errOut io.Writer) (*controllerSet, error) {
	s := &controllerSet{errOut: errOut}
	host, err := controllers.NewHost(m.Tok, m.Weights.Config.VocabSize, controllers.HostOptions{Dirs: []string{dir}, CacheDir: controllers.DefaultCacheDir(), Log: func(l controllers.Log) {
		line := fmt.Sprintf("[controller %s] %s\n", l.Controller, l.Text)
		s.mu.Lock()
		if l.Fault && s.fault == nil {
			s.fault = &l
		}
		if s.hold {
			s.held = append(s.held, line)
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		io.WriteString(errOut, line)
	}})
	if err != nil {
		return nil, err
	}
	s.Host = host
	return s, nil
}

// holdLogs holds the log lines from now on when they go to a terminal
// (where the reply is likely drawn too: a line there would land inside
// text the reply printer may have to erase), and returns the function
// that prints them and stops holding.
func (s *controllerSet) holdLogs() (release func()) {
	if _, _, ok := terminalSize(s.errOut); !ok {
		return func() {}
	}
	s.mu.Lock()
	s.hold = true
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		held := s.held
		s.hold, s.held = false, nil
		s.mu.Unlock()
		for _, line := range held {
			io.WriteString(s.errOut, line)
		}
	}
}

// exitController is run's exit status when the reply was printed but a
// requested controller was refused or switched off for part of it, so
// that its constraint may not hold.
const exitController = 3

// controllerError is run's error for exitController.
type controllerError struct{ controllers.Log }

func (e *controllerError) Error() string {
	return fmt.Sprintf("controller %s did not constrain the whole reply (exit status %d)", e.Controller, exitController)
}

// ExitCode is the process's exit status for e.
func (e *controllerError) ExitCode() int { return exitController }

// failure reports the first refusal or fault so far, or nil.
func (s *controllerSet) failure() *controllerError {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fault == nil {
		return nil
	}
	return &controllerError{*s.fault}
}

// use activates a controller by name or path, once it has checked that
// it runs with arg (controllers.Host.Switch): a controller that refuses
// its argument, or needs one not given, is an error before any reply.
func (s *controllerSet) use(name, arg string) error {
	_, err := s.Switch(name, arg)
	return err
}
