package main

import (
	"fmt"
	"io"
	"runtime"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/cpu"
	"github.com/driftwoodlabs/driftwood/mlxbridge"
)

// validBackend checks a --backend value before anything is loaded.
func validBackend(name string) error {
	switch name {
	case "cpu", "mlx", "auto", "":
		return nil
	}
	return fmt.Errorf("--backend %q: want cpu, mlx or auto", name)
}

// selectBackend returns how to prepare a model for --backend name: "cpu"
// (the pure-Go backend with threads), "mlx" (MLX through libmlxc, found as
// `driftwood doctor` shows, mlxLib being the configured path; a missing
// library is an error) or "auto": MLX when the library loads and has a
// GPU, else the CPU backend after a one-line note on errOut saying why.
// (MLX's CPU device runs 4-bit models several times slower than the CPU
// backend, so auto does not pick it.)
func selectBackend(name string, threads int, mlxLib string, errOut io.Writer) func(*engine.Model) (engine.Backend, error) {
	onCPU := func(m *engine.Model) (engine.Backend, error) {
		return cpu.New(m, cpu.Options{Threads: threads})
	}
	onMLX := func(m *engine.Model) (engine.Backend, error) {
		b, err := mlxbridge.New(m, mlxbridge.Options{Library: mlxLib})
		if err != nil {
			return nil, err // not a typed nil in the interface
		}
		return b, nil
	}
	switch name {
	case "cpu":
		return onCPU
	case "mlx":
		return onMLX
	case "auto", "":
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
	return func(*engine.Model) (engine.Backend, error) {
		return nil, fmt.Errorf("--backend %q: want cpu, mlx or auto", name)
	}
}
