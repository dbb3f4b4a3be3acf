package main

import (
	"fmt"
	"io"
	"runtime"

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
// `driftwood doctor` shows, mlxLib being the configured path; a missing
// library is an error), or "auto": MLX when the library loads and has a
// GPU, else the CPU backend after a one-line note on errOut saying why.
// (MLX's CPU device runs 4-bit models several times slower than the CPU
// backend, so auto does not pick it.)
func selectBackend(name string, threads int, mlxLib string, errOut io.Writer) func(*engine.Model) (engine.Backend, error) {
	opt := backends.Options{Threads: threads, MLXLibrary: mlxLib}
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
	return func(m *engine.Model) (engine.Backend, error) {
		lib, err := mlxbridge.Load(mlxLib)
		if err == nil && !lib.GPU {
			err = fmt.Errorf("the MLX at %s has no GPU (--backend mlx runs it on the CPU, slower)", lib.Path)
		}
		if err == nil {
			var b engine.Backend
			if b, err = onMLX(m); err == nil {
				return b, nil
			}
		}
		// Without MLX on Linux the CPU backend is simply the backend; a
		// Mac without mlx-c, or a library that does not work, is worth
		// a note.
		if !mlxbridge.IsNotFound(err) || runtime.GOOS == "darwin" {
			fmt.Fprintf(errOut, "driftwood: using the CPU backend: %v\n", err)
		}
		return onCPU(m)
	}
}
