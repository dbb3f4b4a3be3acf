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
	// CAPI is the mlx-c API the library was checked for.
	CAPI string
	// GPU says whether MLX sees a GPU (Metal on a Mac); without one the
	// backend runs on MLX's CPU device.
	GPU bool
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
	info := &Library{Path: lib.Path, MLX: lib.Version, CAPI: mlxc.MinCAPI + " or newer"}
	err = lib.Do(func(t *mlxc.Thread) error {
		info.GPU = t.DeviceAvailable(mlxc.GPU)
		return nil
	})
	return info, err
}

// IsNotFound reports whether err says that no libmlxc was found (as
// opposed to a library that was found but is unusable).
func IsNotFound(err error) bool {
	var nf *mlxc.NotFoundError
	return errors.As(err, &nf)
}
