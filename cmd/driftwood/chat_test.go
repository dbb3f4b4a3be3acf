package main

import (
	"bytes"
	"cmp"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestChatFlags(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfg, []byte("model = \"org/from-config\"\nsystem = \"Be brief.\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(bad, []byte("modle = \"typo\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args   []string
		model  string
		err    string
		reason string
	}{
		{[]string{"--config", cfg}, "org/from-config", "", "the config file names the model"},
		{[]string{"--config", cfg, "--model", "/models/m"}, "/models/m", "", "--model wins over the config"},
		{[]string{"--config", filepath.Join(dir, "none.toml")}, "", "", "no config and no --model: the TUI offers a picker"},
		{[]string{"--config", cfg, "--continue", "--session", "a"}, "", "give --continue or --session NAME, not both", "the two ways to resume exclude each other"},
		{[]string{"--config", cfg, "--session", "../escape"}, "", "session name", "session names are checked before the TUI starts"},
		{[]string{"--config", cfg, "--session", ""}, "", `session name ""`, "an empty session name is refused, not taken as no session"},
		{[]string{"--config", cfg, "stray"}, "", `unexpected argument "stray"`, "the chat takes no arguments"},
		{[]string{"--config", bad}, "", `unknown key "modle"`, "config errors name the key"},
	}
	for _, tt := range tests {
		opt, _, err := parseChatFlags(tt.args, &bytes.Buffer{})
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%s\n%q: error %v, want %q", tt.reason, tt.args, err, tt.err)
		case tt.err == "" && err != nil:
			t.Errorf("%s\n%q: %v", tt.reason, tt.args, err)
		case tt.err == "" && cmp.Or(opt.Model, opt.Config.Model) != tt.model:
			t.Errorf("%s\n%q: model %q (config %q), want %q", tt.reason, tt.args, opt.Model, opt.Config.Model, tt.model)
		case tt.err == "" && opt.Model != "" && !slices.Contains(tt.args, "--model"):
			t.Errorf("%s\n%q: Model %q is set without --model, so a resumed session's own model could not win", tt.reason, tt.args, opt.Model)
		}
	}

	opt, _, err := parseChatFlags([]string{"--config", cfg, "--session", "work", "--no-history", "--controllers-dir", dir, "--sessions-dir", dir}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if opt.Session != "work" || !opt.NoHistory || !slices.Equal(opt.ControllerDirs, []string{dir}) || opt.Sessions.Dir != dir || opt.Config.System != "Be brief." {
		t.Errorf("options %+v", opt)
	}
}

// TestChatNeedsATerminal: without a terminal the chat says what to use
// instead.
func TestChatNeedsATerminal(t *testing.T) {
	err := cmdChat(context.Background(), []string{"--config", filepath.Join(t.TempDir(), "none.toml")}, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "driftwood run") {
		t.Errorf("cmdChat on a buffer: %v", err)
	}
}

// TestChatRankFlags: the chat's --ranks and --hostfile name the model
// every rank opens (--model, else the config's) and are refused, before
// any rank starts, without a model, on the CPU backend, with fewer than
// two ranks or with both flags.
func TestChatRankFlags(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.toml")
	os.WriteFile(cfg, []byte("model = \"org/from-config\"\n"), 0o644)
	none := filepath.Join(dir, "none.toml")
	_, cr, err := parseChatFlags([]string{"--config", cfg, "--ranks", "2"}, &bytes.Buffer{})
	if err != nil || !cr.flags.active() || cr.model.model != "org/from-config" || cr.model.configPath != cfg {
		t.Fatalf("--ranks 2: %+v, %v", cr, err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--config", none, "--ranks", "2"}, "need --model"},
		{[]string{"--config", cfg, "--ranks", "1"}, "--ranks 1: give 2 or more"},
		{[]string{"--config", cfg, "--ranks", "2", "--backend", "cpu"}, "need --backend mlx"},
		{[]string{"--config", cfg, "--ranks", "2", "--hostfile", "h.json"}, "not both"},
	} {
		opt, cr, err := parseChatFlags(c.args, &bytes.Buffer{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cr.join(&opt, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.args, err, c.want)
		}
	}
}
