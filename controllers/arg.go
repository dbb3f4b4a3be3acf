package controllers

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/driftwoodlabs/driftwood/internal/limitedfile"
)

// ReadArg returns a controller's argument as the user gave it (on the
// command line, or typed after /controller NAME): "@FILE" is the
// contents of FILE (a JSON schema of some hundred kilobytes does not fit
// one line), bounded as a config file is, "~/" its home; "@@..." is
// "@..." itself.
func ReadArg(v string) (string, error) {
	path, ok := strings.CutPrefix(v, "@")
	if !ok || strings.HasPrefix(path, "@") {
		return strings.TrimPrefix(v, "@"), nil
	}
	if rest, ok := strings.CutPrefix(path, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			path = filepath.Join(home, rest)
		}
	}
	data, err := limitedfile.Read(path, limitedfile.Config)
	if err != nil {
		return "", fmt.Errorf("%w (an argument that starts with @ names a file; write @@ for a leading @)", err)
	}
	return string(data), nil
}
