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
	hint := ""
	for _, n := range e.Names {
		if n == apiMarker {
			hint = fmt.Sprintf("; mlx-c %s or newer is required", MinCAPI)
		}
	}
	return fmt.Sprintf("%s: missing mlx-c function%s %s%s", e.Path, plural(len(e.Names)), strings.Join(e.Names, ", "), hint)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
