// Package backends is the registry of engine.Backend implementations: the
// names that --backend and the config's backend key accept, and how each
// backend opens a model. Adding a backend is implementing engine.Backend,
// one entry in List and one call of the conformance check
// (internal/golden.CheckBackend) in its tests.
package backends

import (
	"fmt"
	"strings"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/cpu"
	"github.com/driftwoodlabs/driftwood/mlxbridge"
)

// Auto is the name that lets the caller pick a backend by what the
// machine has; it is accepted wherever a backend's name is.
const Auto = "auto"

// Options holds the settings of every backend; each reads its own.
type Options struct {
	// Threads is the CPU backend's cpu.Options.Threads.
	Threads int
	// MLXLibrary is the MLX backend's mlxbridge.Options.Library.
	MLXLibrary string
	// MLXSampling is the MLX backend's mlxbridge.Options.Sampling.
	MLXSampling string
	// MLXGroup is the MLX backend's mlxbridge.Options.Group.
	MLXGroup *mlxbridge.Group
	// KVType is the KV cache type of either backend ("" the default).
	KVType engine.KVType
	// CPUTuningCache is the CPU backend's cpu.Options.TuningCache.
	CPUTuningCache string
}

// Backend is one entry of the registry.
type Backend struct {
	// Name is what the user types, and the backend's engine.Backend Name.
	Name string
	// Open prepares a model on this backend.
	Open func(m *engine.Model, opt Options) (engine.Backend, error)
}

// List returns the backends, the reference first.
func List() []Backend {
	return []Backend{
		{"cpu", func(m *engine.Model, opt Options) (engine.Backend, error) {
			return nilIfFailed(cpu.New(m, cpu.Options{Threads: opt.Threads, KVType: opt.KVType, TuningCache: opt.CPUTuningCache}))
		}},
		{"mlx", func(m *engine.Model, opt Options) (engine.Backend, error) {
			return nilIfFailed(mlxbridge.New(m, mlxbridge.Options{Library: opt.MLXLibrary, Sampling: opt.MLXSampling, KVType: opt.KVType, Group: opt.MLXGroup, Reference: FloatCPU}))
		}},
	}
}

// FloatCPU opens m on the CPU backend with its float kernels and an f32
// KV cache: the reference that MLX's float32 activations are compared
// with (by the MLX backend's self-check and doctor's smoke test).
func FloatCPU(m *engine.Model) (engine.Backend, error) {
	return nilIfFailed(cpu.New(m, cpu.Options{Threads: 1, KVType: engine.KVF32, Kernels: "float"}))
}

// nilIfFailed returns b as an engine.Backend, or nil (not a typed nil in
// the interface) when err is set.
func nilIfFailed[B engine.Backend](b B, err error) (engine.Backend, error) {
	if err != nil {
		return nil, err
	}
	return b, nil
}

// Lookup returns the backend called name.
func Lookup(name string) (Backend, bool) {
	for _, b := range List() {
		if b.Name == name {
			return b, true
		}
	}
	return Backend{}, false
}

// Choices lists the accepted names for help and error texts:
// "cpu, mlx or auto".
func Choices() string {
	var names []string
	for _, b := range List() {
		names = append(names, b.Name)
	}
	return strings.Join(names, ", ") + " or " + Auto
}

// Check says whether name is a backend of the registry or Auto.
func Check(name string) error {
	if _, ok := Lookup(name); ok || name == Auto {
		return nil
	}
	return fmt.Errorf("%q: want %s", name, Choices())
}
