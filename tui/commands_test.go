package tui

import (
	"slices"
	"strings"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine"
)

func TestParseCommand(t *testing.T) {
	tests := []struct {
		line   string
		name   string
		args   []string
		err    string
		reason string
	}{
		{"/quit", "quit", nil, "", "a command without arguments"},
		{"  /new  ", "new", nil, "", "surrounding spaces are ignored"},
		{"/QUIT", "quit", nil, "", "names are case-insensitive"},
		{"/controller regex [a-z]+ ?", "controller", []string{"regex", "[a-z]+ ?"}, "", "a controller's argument is the rest of the line, spaces and all"},
		{"/controller json   {\"a\": 1}", "controller", []string{"json", "{\"a\": 1}"}, "", "spaces between NAME and ARG are not part of ARG"},
		{"/controller off", "controller", []string{"off"}, "", "off turns the controller off"},
		{"/controller off now", "", nil, "usage: /controller off", "off takes no argument"},
		{"/controller", "", nil, "usage: /controller NAME [ARG] | off", "a controller needs a name"},
		{"/save", "save", nil, "", "the name of /save is optional"},
		{"/save notes", "save", []string{"notes"}, "", "/save NAME"},
		{"/save two words", "", nil, "usage: /save [NAME]", "a session name is one word"},
		{"/load", "load", nil, "", "/load without a name opens the picker"},
		{"/system You are terse.  Answer in French.", "system", []string{"You are terse.  Answer in French."}, "", "the system prompt is the rest of the line, as typed"},
		{"/system", "system", nil, "", "/system alone shows the prompt"},
		{"/set temp 0.7", "set", []string{"temp", "0.7"}, "", "/set KEY VALUE"},
		{"/set temp", "", nil, "usage: /set temp|top_p|top_k|min_p|seed|max_tokens VALUE", "/set needs a value"},
		{"/regen now", "", nil, "usage: /regen", "/regen takes no argument"},
		{"/frobnicate", "", nil, "unknown command /frobnicate (/help lists them)", "unknown commands are named"},
		{"hello", "", nil, "not a command: commands start with /", "text is not a command"},
	}
	for _, tt := range tests {
		c, err := parseCommand(tt.line)
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if gotErr != tt.err || err == nil && (c.name() != tt.name || !slices.Equal(c.args, tt.args)) {
			t.Errorf("%s\nparseCommand(%q) = %q %q, %q; want %q %q, %q", tt.reason, tt.line, c.name(), c.args, gotErr, tt.name, tt.args, tt.err)
		}
	}
}

func TestIsCommand(t *testing.T) {
	for line, want := range map[string]bool{
		"/help":        true,
		"/":            false, // a lone slash is text
		"/ not a cmd":  false,
		"//comment":    false,
		"/usr/bin/env": true, // parsed, and refused as an unknown command
		"hi /help":     false,
	} {
		if got := isCommand(line); got != want {
			t.Errorf("isCommand(%q) = %v, want %v", line, got, want)
		}
	}
}

func TestApplySetting(t *testing.T) {
	base := engine.SamplerConfig{Temperature: 0.6, TopP: 0.9, RepeatPenalty: 1}
	tests := []struct {
		key, value string
		want       engine.SamplerConfig
		wantMax    int
		err        string
		reason     string
	}{
		{"temp", "0", engine.SamplerConfig{TopP: 0.9, RepeatPenalty: 1}, 100, "", "temperature 0 is greedy"},
		{"top_p", "0.5", engine.SamplerConfig{Temperature: 0.6, TopP: 0.5, RepeatPenalty: 1}, 100, "", ""},
		{"top_k", "40", engine.SamplerConfig{Temperature: 0.6, TopP: 0.9, TopK: 40, RepeatPenalty: 1}, 100, "", ""},
		{"min_p", "0.05", engine.SamplerConfig{Temperature: 0.6, TopP: 0.9, MinP: 0.05, RepeatPenalty: 1}, 100, "", ""},
		{"seed", "42", engine.SamplerConfig{Temperature: 0.6, TopP: 0.9, RepeatPenalty: 1, Seed: 42}, 100, "", ""},
		{"max_tokens", "0", base, 0, "", "0 lifts the bound"},
		{"temp", "-1", base, 100, "temperature -1: must be 0 or more", "the sampler's own checks apply"},
		{"top_p", "1.5", base, 100, "top_p 1.5: must be in (0, 1]", ""},
		{"top_k", "2.5", base, 100, `top_k: "2.5" is not a whole number`, ""},
		{"temp", "NaN", base, 100, `temp: "NaN" is not a number`, "NaN would poison the logits"},
		{"seed", "-3", base, 100, `seed: "-3" is not a whole number of 0 or more`, ""},
		{"max_tokens", "-5", base, 100, "max_tokens -5: must be 0 (no limit) or more", ""},
		{"temperature", "1", base, 100, `no setting "temperature" (have: temp, top_p, top_k, min_p, seed, max_tokens)`, "unknown keys list the known ones"},
	}
	for _, tt := range tests {
		s, n, err := applySetting(base, 100, tt.key, tt.value)
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if gotErr != tt.err || err == nil && (s != tt.want || n != tt.wantMax) {
			t.Errorf("%s\n/set %s %s = %+v, %d, %q; want %+v, %d, %q", tt.reason, tt.key, tt.value, s, n, gotErr, tt.want, tt.wantMax, tt.err)
		}
	}
}

func TestCompletions(t *testing.T) {
	names := func(k argKind) []string {
		switch k {
		case argController:
			return []string{"json", "regex"}
		case argSession:
			return []string{"notes", "work"}
		case argSetting:
			return settingNames()
		case argSwitch:
			return []string{"on", "off"}
		}
		return nil
	}
	tests := []struct {
		line   string
		want   []string
		reason string
	}{
		{"/con", []string{"/controller", "/controllers"}, "command names by prefix"},
		{"/q", []string{"/quit"}, ""},
		{"/", nil, "every command; checked by length below"},
		{"/controller ", []string{"/controller json", "/controller regex", "/controller off"}, "controller names, and off"},
		{"/controller r", []string{"/controller regex"}, ""},
		{"/controller regex a", nil, "the argument is free text"},
		{"/load w", []string{"/load work"}, "session names"},
		{"/set t", []string{"/set temp", "/set top_p", "/set top_k"}, "setting names"},
		{"/think o", []string{"/think on", "/think off"}, "a switch"},
		{"/system y", nil, "free text is not completed"},
		{"/quit ", nil, "no arguments to complete"},
		{"hello", nil, "messages are not completed"},
		{"/con\nmore", nil, "nor multi-line input"},
	}
	for _, tt := range tests {
		got := completions(tt.line, names)
		if tt.line == "/" {
			if len(got) != len(commandSpecs()) {
				t.Errorf("completions(\"/\") = %d commands, want all %d", len(got), len(commandSpecs()))
			}
			continue
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s\ncompletions(%q) = %q, want %q", tt.reason, tt.line, got, tt.want)
		}
	}
}

// TestCommandsText: every command is in the help, with its usage.
func TestCommandsText(t *testing.T) {
	text := commandsText()
	for _, c := range commandSpecs() {
		if !strings.Contains(text, commandUsage(c)) || !strings.Contains(text, c.help) {
			t.Errorf("help lacks %s", commandUsage(c))
		}
	}
}
