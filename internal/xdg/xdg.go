// Package xdg places Driftwood's files by the XDG Base Directory
// specification: $XDG_DATA_HOME, $XDG_CONFIG_HOME, $XDG_STATE_HOME and
// $XDG_CACHE_HOME, each with its usual default under the home folder, and
// a "driftwood" folder inside.
package xdg

import (
	"os"
	"path/filepath"
)

// Data is $XDG_DATA_HOME/driftwood/name (sessions, controllers), by
// default under ~/.local/share.
func Data(name string) string { return dir("XDG_DATA_HOME", ".local/share", name) }

// Config is $XDG_CONFIG_HOME/driftwood/name, by default under ~/.config.
func Config(name string) string { return dir("XDG_CONFIG_HOME", ".config", name) }

// State is $XDG_STATE_HOME/driftwood/name (the input history), by
// default under ~/.local/state.
func State(name string) string { return dir("XDG_STATE_HOME", ".local/state", name) }

// Cache is $XDG_CACHE_HOME/driftwood/name (compiled controllers), by
// default under ~/.cache.
func Cache(name string) string { return dir("XDG_CACHE_HOME", ".cache", name) }

// dir is $env/driftwood/name, or ~/fallback/driftwood/name when env is
// unset or, as the specification says to treat it, not an absolute path.
func dir(env, fallback, name string) string {
	base := os.Getenv(env)
	if !filepath.IsAbs(base) {
		home, err := os.UserHomeDir()
		if err != nil {
			home = "."
		}
		base = filepath.Join(home, fallback)
	}
	return filepath.Join(base, "driftwood", name)
}
