package mlxbridge

import (
	"errors"

	"github.com/driftwoodlabs/driftwood/mlxbridge/internal/mlxc"
)

// EnvVar names the environment variable that points at libmlxc; when set
// it is the only place looked at.
const EnvVar = mlxc.EnvVar

// Library describes a loaded libmlxc, for `driftwood doctor`.
type Library struct {
	// Path is the file that was loaded.
	Path string
	// MLX is MLX's version as the library reports it.
	MLX string
	// CAPI is the mlx-c release the library was recognised as (by its
	// functions: mlx-c has no version function); its declarations are
	// the ones bound.
	CAPI string
	// Newer says the library is, or may be, newer than every mlx-c
	// release whose headers Driftwood was built with; Why says how that
	// was seen. Such a library must pass SelfCheck before use.
	Newer bool
	Why   string
	// GPU says whether MLX sees a GPU of any kind (Metal on a Mac, CUDA
	// on Linux); without one the backend runs on MLX's CPU device.
	GPU bool
	// Device names the GPU ("Apple M2 Pro (Metal)"), or is "cpu".
	Device string
}

// Candidates lists, in order, the files looked for given the configured
// library path ("" for none): DRIFTWOOD_MLXC alone when set, else the
// configured path alone when set, else /opt/homebrew/lib (macOS),
// /usr/local/lib, then the folders of DYLD_LIBRARY_PATH (macOS) or
// LD_LIBRARY_PATH.
func Candidates(library string) []string { return mlxc.Search{Path: library}.Candidates() }

// Load finds and loads libmlxc as New does.
//
// # Errors
//
// As New's for a missing or unusable library.
func Load(library string) (*Library, error) {
	lib, err := open(library)
	if err != nil {
		return nil, err
	}
	info := &Library{Path: lib.Path, MLX: lib.Version, CAPI: lib.Release.Name, Newer: lib.Release.Newer, Why: lib.Release.Why, Device: "cpu"}
	err = lib.Do(func(t *mlxc.Thread) error {
		if g, ok := t.GPUInfo(); ok {
			info.GPU, info.Device = true, g.String()
		}
		return nil
	})
	return info, err
}

// MinCAPI is the oldest mlx-c release the backend supports.
const MinCAPI = mlxc.MinCAPI

// IsNotFound reports whether err says that no libmlxc was found (as
// opposed to a library that was found but is unusable).
func IsNotFound(err error) bool {
	var nf *mlxc.NotFoundError
	return errors.As(err, &nf)
}
