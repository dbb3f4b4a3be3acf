// Package config reads Driftwood's TOML configuration file: the defaults
// for the model, sampling and threads that command-line flags override.
//
// An unknown key or a value of the wrong type is an error that names the
// file, line and key: a typo must not silently fall back to a default.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/driftwoodlabs/driftwood/backends"
	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/cpu"
	"github.com/driftwoodlabs/driftwood/internal/atomicfile"
	"github.com/driftwoodlabs/driftwood/internal/limitedfile"
	"github.com/driftwoodlabs/driftwood/internal/xdg"
	"github.com/driftwoodlabs/driftwood/mlxbridge"
	"github.com/driftwoodlabs/driftwood/sessions"
)

// DefaultModel is the model offered on first run: Llama 3.2 1B Instruct in
// MLX 4-bit (695 MB), which runs on the CPU backend and on Apple GPUs.
const DefaultModel = "mlx-community/Llama-3.2-1B-Instruct-4bit"

// Config is the whole configuration file.
type Config struct {
	// Model is a model folder or Hugging Face repo id.
	Model string `toml:"model"`
	// Threads for the CPU backend; 0 means one per physical core.
	Threads int `toml:"threads"`
	// Backend is a name of the backends registry (cpu, mlx) or auto (MLX
	// when libmlxc loads and has a GPU).
	Backend string `toml:"backend"`
	// MLXLibrary is the path of libmlxc, when it is not in a usual place.
	MLXLibrary string `toml:"mlx_library"`
	// MLXSampling is where MLX picks tokens: device, host, or "" for the
	// device on a GPU (mlxbridge.Options.Sampling).
	MLXSampling string `toml:"mlx_sampling"`
	// Context is the context window in tokens (capped by the model's).
	Context int `toml:"context"`
	// KVType is the KV cache's element type: f16 (the default), bf16,
	// q8_0 or f32 (engine.KVType).
	KVType string `toml:"kv_type"`
	// MaxTokens bounds a reply; 0 means until the model stops.
	MaxTokens int `toml:"max_tokens"`
	// System is the default system prompt.
	System string `toml:"system"`
	// NoHistory stops the chat from saving what you type (the input
	// history in $XDG_STATE_HOME/driftwood/history).
	NoHistory bool `toml:"no_history"`
	// NoPrefixCache stops new chats from keeping and reusing the KV
	// state of their system prompt and template headers (in
	// $XDG_CACHE_HOME/driftwood/prefixes).
	NoPrefixCache bool `toml:"no_prefix_cache"`
	// Sampling holds the sampler's defaults.
	Sampling engine.SamplerConfig `toml:"sampling"`
}

// Default is the configuration used when there is no file.
func Default() Config {
	return Config{Backend: backends.Auto, Context: 8192, MaxTokens: 0, Sampling: engine.DefaultSamplerConfig()}
}

// Prefixes is the prefix cache new chats use: the default one, or nil
// when the configuration turns it off.
func (c Config) Prefixes() *sessions.Prefixes {
	if c.NoPrefixCache {
		return nil
	}
	return sessions.DefaultPrefixes()
}

// Path is the configuration file's location:
// $XDG_CONFIG_HOME/driftwood/config.toml, by default under ~/.config.
func Path() string { return xdg.Config("config.toml") }

// Load reads the file at path over the defaults. A missing file gives the
// defaults and no error.
func Load(path string) (Config, error) {
	c := Default()
	data, err := limitedfile.Read(path, limitedfile.Config)
	if errors.Is(err, os.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, err
	}
	if err := Parse(data, &c); err != nil {
		return Default(), fmt.Errorf("%s:%w", path, err)
	}
	return c, nil
}

// Parse decodes TOML data into c, strictly, and validates the result. Its
// errors start with "LINE: " so that the caller can prefix the file name.
func Parse(data []byte, c *Config) error {
	if u := firstUnknownKey(data, reflect.TypeFor[Config]()); u != nil {
		return fmt.Errorf("%d: unknown key %q", u.line, u.key)
	}
	d := toml.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(c); err != nil {
		return describe(err)
	}
	if err := c.Sampling.Validate(); err != nil {
		return fmt.Errorf(" [sampling] %w", err)
	}
	if err := backends.Check(c.Backend); err != nil {
		return fmt.Errorf(" backend %w", err)
	}
	if err := mlxbridge.CheckSampling(c.MLXSampling); err != nil {
		return fmt.Errorf(" mlx_sampling %w", err)
	}
	if err := cpu.CheckThreads(c.Threads); err != nil {
		return fmt.Errorf(" threads %d: %w", c.Threads, err)
	}
	if err := CheckContext(c.Context); err != nil {
		return fmt.Errorf(" context %d: %w", c.Context, err)
	}
	if _, err := engine.ParseKVType(c.KVType); err != nil {
		return fmt.Errorf(" kv_type: %w", err)
	}
	if c.MaxTokens < 0 {
		return fmt.Errorf(" max_tokens %d: must be 0 (no limit) or more", c.MaxTokens)
	}
	return nil
}

// CheckContext says whether n is a usable context size: 0 (the model's
// longest) or a positive number of tokens up to engine.MaxPositions.
// Whether it fits the model and the machine is checked when the model is
// loaded (engine.Config.CheckWindow).
func CheckContext(n int) error {
	if n < 0 || n > engine.MaxPositions {
		return fmt.Errorf("must be 0 (the model's longest) to %d tokens", engine.MaxPositions)
	}
	return nil
}

func describe(err error) error {
	var strict *toml.StrictMissingError
	if errors.As(err, &strict) && len(strict.Errors) > 0 {
		e := strict.Errors[0]
		row, _ := e.Position()
		return fmt.Errorf("%d: unknown key %q", row, strings.Join(e.Key(), "."))
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, _ := de.Position()
		msg := strings.TrimPrefix(de.Error(), "toml: ")
		if k := de.Key(); len(k) > 0 {
			return fmt.Errorf("%d: key %q: %s", row, strings.Join(k, "."), msg)
		}
		return fmt.Errorf("%d: %s", row, msg)
	}
	return fmt.Errorf(" %w", err)
}

// RememberModel sets model as the configured model in the file at path,
// when the file configures none: the line is added at the top, and the
// rest of the file (comments included) is kept as it is; a missing file
// (and its folder) is created. It reports whether it wrote the file. The
// result is checked with Parse before it replaces the file, atomically,
// keeping its permissions; a symbolic link is followed, not replaced.
func RememberModel(path, model string) (bool, error) {
	mode := os.FileMode(0o644)
	if real, err := filepath.EvalSymlinks(path); err == nil { // a dotfiles link stays a link
		path = real
		if info, err := os.Stat(path); err == nil {
			mode = info.Mode().Perm()
		}
	}
	old, err := limitedfile.Read(path, limitedfile.Config)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	c := Default()
	if err := Parse(old, &c); err != nil {
		return false, fmt.Errorf("%s:%w", path, err)
	}
	if c.Model != "" {
		return false, nil
	}
	line, err := toml.Marshal(struct {
		Model string `toml:"model"`
	}{model})
	if err != nil {
		return false, err
	}
	data := append(line, old...)
	if err := Parse(data, &c); err != nil || c.Model != model {
		return false, fmt.Errorf("%s: adding model = %q would not parse: %v", path, model, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return false, err
	}
	err = atomicfile.Write(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
	if err == nil && mode != 0o644 {
		err = os.Chmod(path, mode)
	}
	return err == nil, err
}
