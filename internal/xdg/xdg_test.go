package xdg

import (
	"path/filepath"
	"testing"
)

func TestDirs(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_DATA_HOME", "/data")
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("XDG_STATE_HOME", "relative/state")
	t.Setenv("XDG_CACHE_HOME", "/cache")
	for _, tc := range []struct{ got, want, reason string }{
		{Data("sessions"), "/data/driftwood/sessions", "a set variable is used"},
		{Config("config.toml"), filepath.Join(home, ".config/driftwood/config.toml"), "an empty one falls back to the home folder"},
		{State("history"), filepath.Join(home, ".local/state/driftwood/history"), "a relative one is ignored, as the specification says"},
		{Cache("wasm"), "/cache/driftwood/wasm", "the cache has its own variable"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %q, want %q", tc.reason, tc.got, tc.want)
		}
	}
}
