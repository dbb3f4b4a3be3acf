package mlxc

import (
	"fmt"
	"strings"
)

// Error is a failed MLX call: the C function and the message MLX's error
// handler received.
type Error struct {
	Func string
	Msg  string
}

func (e *Error) Error() string { return "mlx: " + e.Func + ": " + e.Msg }

// MissingSymbolsError says a library lacks functions Driftwood binds.
type MissingSymbolsError struct {
	Path  string
	Names []string
	Total int // how many symbols were looked up
}

func (e *MissingSymbolsError) Error() string {
	if len(e.Names) == e.Total {
		return fmt.Sprintf("%s is not libmlxc: none of the %d mlx-c functions Driftwood uses is there (%s, ...)", e.Path, e.Total, e.Names[0])
	}
	return fmt.Sprintf("%s: missing mlx-c function%s %s", e.Path, plural(len(e.Names)), strings.Join(e.Names, ", "))
}

// TooOldError says a library is an mlx-c release older than MinCAPI.
type TooOldError struct {
	Path  string
	Found string // the release recognised, or "older than 0.1.0"
}

func (e *TooOldError) Error() string {
	return fmt.Sprintf("%s is mlx-c %s; Driftwood needs mlx-c %s or newer (%s)", e.Path, e.Found, MinCAPI, Upgrade)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
