//go:build !(darwin || linux)

package mlxc

import "errors"

// Open reports that MLX cannot be loaded on this platform.
func Open(path string) (*Lib, error) {
	return nil, errors.New("MLX is supported on macOS and Linux only")
}
