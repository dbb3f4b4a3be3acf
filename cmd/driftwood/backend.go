package main

import (
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"

	"github.com/driftwoodlabs/driftwood/backends"
	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/mlxbridge"
)

// validBackend checks a --backend value before anything is loaded: a name
// of the backends registry, auto, or "" (auto).
func validBackend(name string) error {
	if name == "" {
		return nil
	}
	if err := backends.Check(name); err != nil {
		return fmt.Errorf("--backend %w", err)
	}
	return nil
}

// selectBackend returns how to prepare a model for --backend name: a
// backend of the registry by its name (for mlx, libmlxc is found as
// `driftwood doctor` shows, opt.MLXLibrary being the configured path; a missing
// library is an error), or "auto": MLX when the library loads and has a
// GPU, else the CPU backend after a one-line note on errOut saying why.
// (MLX's CPU device runs 4-bit models several times slower than the CPU
// backend, so auto does not pick it.)
func selectBackend(name string, opt backends.Options, errOut io.Writer) func(*engine.Model) (engine.Backend, error) {
	open := func(name string) func(*engine.Model) (engine.Backend, error) {
		b, _ := backends.Lookup(name)
		return func(m *engine.Model) (engine.Backend, error) { return b.Open(m, opt) }
	}
	if name == "" {
		name = backends.Auto
	}
	if err := validBackend(name); err != nil {
		return func(*engine.Model) (engine.Backend, error) { return nil, err }
	}
	if name != backends.Auto {
		return open(name)
	}
	onCPU, onMLX := open("cpu"), open("mlx")
	said := ""
	return func(m *engine.Model) (engine.Backend, error) {
		lib, err := mlxbridge.Load(opt.MLXLibrary)
		if err == nil && !lib.GPU {
			err = fmt.Errorf("the MLX at %s has no GPU (--backend mlx runs it on the CPU, slower)", lib.Path)
		}
		if err == nil {
			var b engine.Backend
			if b, err = onMLX(m); err == nil {
				return b, nil
			}
		}
		if note := fallbackNote(hostOS, err); note != "" && note != said {
			said = note // once: a chat that loads another model says it again only if it changed
			fmt.Fprintf(errOut, "driftwood: %s\n", note)
		}
		return onCPU(m)
	}
}

// hostOS is runtime.GOOS; the tests set it to check a Mac's notes
// anywhere.
var hostOS = runtime.GOOS

// macNoMLX is auto's note on a Mac without mlx-c.
const macNoMLX = "the GPU is unused: mlx-c is not installed (brew install mlx-c); running on the CPU backend"

// fallbackNote is the line auto writes when MLX could not be used for
// err, on goos: on a Mac a missing libmlxc means an idle GPU and says how
// to get it; elsewhere the CPU backend is simply the backend, so nothing
// is said; a library that was found and does not work is always named.
func fallbackNote(goos string, err error) string {
	switch {
	case mlxbridge.IsNotFound(err) && goos == "darwin":
		return macNoMLX
	case mlxbridge.IsNotFound(err):
		return ""
	}
	return "using the CPU backend: " + err.Error()
}

// noteBox keeps the lines selectBackend writes for the chat, which shows
// them in its status area instead of on the terminal it draws.
type noteBox struct {
	mu   sync.Mutex
	text string
}

func (n *noteBox) Write(p []byte) (int, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.text += string(p)
	return len(p), nil
}

// take returns the lines written since the last take, without the
// "driftwood: " prefix the terminal gets, on one line.
func (n *noteBox) take() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(n.text), "\n") {
		if l != "" {
			lines = append(lines, strings.TrimPrefix(l, "driftwood: "))
		}
	}
	n.text = ""
	return strings.Join(lines, "; ")
}
