package hub

import (
	"os"
	"path/filepath"
	"testing"
)

func TestOptionsFromEnv(t *testing.T) {
	home := t.TempDir()
	for _, v := range []string{"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_TOKEN", "HF_TOKEN_PATH", "HF_ENDPOINT", "XDG_CACHE_HOME", "TRANSFORMERS_OFFLINE"} {
		t.Setenv(v, "")
	}
	t.Setenv("HOME", home)
	t.Setenv("HF_HOME", "")
	t.Setenv("HF_HUB_OFFLINE", "")
	o := OptionsFromEnv()
	if want := filepath.Join(home, ".cache", "huggingface", "hub"); o.CacheDir != want || o.Offline || o.Token != "" || o.endpoint() != DefaultEndpoint {
		t.Errorf("defaults: %+v (want cache %s)", o, want)
	}

	t.Setenv("XDG_CACHE_HOME", "/xdg")
	if o := OptionsFromEnv(); o.CacheDir != "/xdg/huggingface/hub" {
		t.Errorf("XDG_CACHE_HOME: cache %s", o.CacheDir)
	}
	t.Setenv("HF_HOME", "~/hf")
	os.MkdirAll(filepath.Join(home, "hf"), 0o755)
	os.WriteFile(filepath.Join(home, "hf", "token"), []byte("hf_saved\n"), 0o600)
	t.Setenv("HF_HUB_OFFLINE", "yes")
	t.Setenv("HF_ENDPOINT", "http://mirror.local/")
	o = OptionsFromEnv()
	if o.CacheDir != filepath.Join(home, "hf", "hub") || o.Token != "hf_saved" || !o.Offline || o.endpoint() != "http://mirror.local" {
		t.Errorf("HF_HOME, token file, offline, endpoint: %+v", o)
	}
	t.Setenv("HF_HUB_CACHE", "$HOME/c")
	t.Setenv("HF_TOKEN", "hf_env")
	if o := OptionsFromEnv(); o.CacheDir != filepath.Join(home, "c") || o.Token != "hf_env" {
		t.Errorf("HF_HUB_CACHE, HF_TOKEN: %+v", o)
	}
}
