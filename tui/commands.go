package tui

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/sessions"
)

// argKind says what a command's first argument names, for completion.
type argKind int

const (
	argNone argKind = iota
	argController
	argSession
	argSetting
	argText
	argSwitch // on or off
)

// commandSpec describes one slash command.
type commandSpec struct {
	name  string
	usage string // the arguments, for /help
	help  string
	arg   argKind
	// min and max bound the argument count; max -1 means the rest of the
	// line is one argument (free text).
	min, max int
	// whileReplying is true for commands that may run while a reply is
	// being generated (they do not touch the conversation).
	whileReplying bool
	// run carries the command out.
	run func(*chatParts, command) tea.Cmd
}

// commandSpecs is the table of slash commands, in the order /help lists
// them.
func commandSpecs() []commandSpec {
	return []commandSpec{
		{name: "controller", usage: "NAME [ARG] | off", help: "switch the controller now (also mid-reply), or turn it off", arg: argController, min: 1, max: 2, whileReplying: true, run: runController},
		{name: "controllers", help: "list the controllers and pick one", whileReplying: true, run: runControllers},
		{name: "save", usage: "[NAME]", help: "save the conversation as a session", arg: argSession, max: 1, run: runSave},
		{name: "load", usage: "[NAME]", help: "resume a saved session (a picker without NAME)", arg: argSession, max: 1, run: runLoad},
		{name: "sessions", help: "list the saved sessions", whileReplying: true, run: runSessions},
		{name: "new", help: "start a new conversation (the current one is saved)", run: runNew},
		{name: "system", usage: "[TEXT | off]", help: "show, set or remove the system prompt", arg: argText, max: -1, run: runSystem},
		{name: "think", usage: "[on | off]", help: "say or switch whether the model thinks first (Qwen3)", arg: argSwitch, max: 1, run: runThink},
		{name: "set", usage: "temp|top_p|top_k|min_p|seed|max_tokens VALUE", help: "change a sampling setting", arg: argSetting, min: 2, max: 2, run: runSet},
		{name: "show", help: "show the model, the settings and the controller", run: runShow},
		{name: "regen", help: "generate the last reply again", run: runRegen},
		{name: "compact", help: "take the oldest turns out of the model's view, to make room (the transcript keeps them)", run: runCompact},
		{name: "copy", help: "copy the last reply to the clipboard (OSC 52)", whileReplying: true, run: runCopy},
		{name: "stats", help: "speed and size of the last reply", whileReplying: true, run: runStats},
		{name: "help", help: "list the commands and keys", whileReplying: true, run: runHelp},
		{name: "quit", help: "save and quit", whileReplying: true, run: runQuit},
	}
}

// lookupCommand finds a command by name.
func lookupCommand(name string) (commandSpec, bool) {
	i := slices.IndexFunc(commandSpecs(), func(c commandSpec) bool { return c.name == name })
	if i < 0 {
		return commandSpec{}, false
	}
	return commandSpecs()[i], true
}

// commandUsage is "/name ARGS".
func commandUsage(spec commandSpec) string {
	if spec.usage == "" {
		return "/" + spec.name
	}
	return "/" + spec.name + " " + spec.usage
}

// command is a parsed slash command.
type command struct {
	spec commandSpec
	// args are the arguments; for /controller the second one is the
	// rest of the line (a controller's argument may hold spaces), for
	// /system the only one is the whole text.
	args []string
}

// name is the command's name.
func (c command) name() string { return c.spec.name }

// arg returns argument i, or "".
func (c command) arg(i int) string {
	if i < len(c.args) {
		return c.args[i]
	}
	return ""
}

// isCommand reports whether the input is a slash command (a line starting
// with "/" and a letter; "/ " or "//" send the text as it is).
func isCommand(line string) bool {
	return len(line) > 1 && line[0] == '/' && (line[1] >= 'a' && line[1] <= 'z' || line[1] >= 'A' && line[1] <= 'Z')
}

// parseCommand parses a slash command line.
func parseCommand(line string) (command, error) {
	line = strings.TrimSpace(line)
	if !isCommand(line) {
		return command{}, errors.New("not a command: commands start with /")
	}
	name, rest, _ := strings.Cut(line[1:], " ")
	rest = strings.TrimSpace(rest)
	spec, ok := lookupCommand(strings.ToLower(name))
	if !ok {
		return command{}, fmt.Errorf("unknown command /%s (/help lists them)", name)
	}
	c := command{spec: spec}
	switch {
	case spec.max < 0:
		if rest != "" {
			c.args = []string{rest}
		}
	case spec.max == 2:
		// NAME then the rest of the line as one argument.
		if first, second, ok := strings.Cut(rest, " "); ok {
			c.args = []string{first, strings.TrimSpace(second)}
		} else if rest != "" {
			c.args = []string{rest}
		}
	default:
		c.args = strings.Fields(rest)
	}
	if n := len(c.args); n < spec.min || spec.max >= 0 && n > spec.max {
		usage := "/" + spec.name
		if spec.usage != "" {
			usage += " " + spec.usage
		}
		return command{}, fmt.Errorf("usage: %s", usage)
	}
	if spec.name == "controller" && c.arg(0) == "off" && len(c.args) > 1 {
		return command{}, errors.New("usage: /controller off")
	}
	return c, nil
}

// settingNames are the settings /set changes.
func settingNames() []string {
	return []string{"temp", "top_p", "top_k", "min_p", "seed", "max_tokens"}
}

// applySetting returns the sampler and reply bound with one setting
// changed, after checking the value.
func applySetting(s engine.SamplerConfig, maxTokens int, key, value string) (engine.SamplerConfig, int, error) {
	float := func() (float64, error) {
		f, err := strconv.ParseFloat(value, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, fmt.Errorf("%s: %q is not a number", key, value)
		}
		return f, nil
	}
	integer := func() (int, error) {
		n, err := strconv.Atoi(value)
		if err != nil {
			return 0, fmt.Errorf("%s: %q is not a whole number", key, value)
		}
		return n, nil
	}
	var err error
	switch key {
	case "temp":
		s.Temperature, err = float()
	case "top_p":
		s.TopP, err = float()
	case "min_p":
		s.MinP, err = float()
	case "top_k":
		s.TopK, err = integer()
	case "seed":
		s.Seed, err = strconv.ParseUint(value, 10, 64)
		if err != nil {
			err = fmt.Errorf("seed: %q is not a whole number of 0 or more", value)
		}
	case "max_tokens":
		maxTokens, err = integer()
		if err == nil && maxTokens < 0 {
			err = fmt.Errorf("max_tokens %d: must be 0 (no limit) or more", maxTokens)
		}
	default:
		return s, maxTokens, fmt.Errorf("no setting %q (have: %s)", key, strings.Join(settingNames(), ", "))
	}
	if err != nil {
		return s, maxTokens, err
	}
	return s, maxTokens, s.Validate()
}

// completions lists the ways to complete a command line being typed: the
// commands that start with the first word, or the names the argument
// could be (names gives them by kind). Each completion is a whole line.
func completions(line string, names func(argKind) []string) []string {
	if !strings.HasPrefix(line, "/") || strings.Contains(line, "\n") {
		return nil
	}
	word, rest, spaced := strings.Cut(line[1:], " ")
	var out []string
	if !spaced {
		for _, c := range commandSpecs() {
			if strings.HasPrefix(c.name, strings.ToLower(word)) {
				out = append(out, "/"+c.name)
			}
		}
		return out
	}
	spec, ok := lookupCommand(strings.ToLower(word))
	if !ok || strings.Contains(rest, " ") || spec.arg == argNone || spec.arg == argText {
		return nil
	}
	cands := names(spec.arg)
	if spec.arg == argController {
		cands = append(cands, "off")
	}
	for _, n := range cands {
		if strings.HasPrefix(n, rest) {
			out = append(out, "/"+spec.name+" "+n)
		}
	}
	return out
}

// argNames lists what an argument may be, for completion: host's
// controllers (none while host is nil), the sessions in store, the
// settings.
func argNames(store sessions.Store, host *controllerHost) func(argKind) []string {
	return func(kind argKind) []string {
		switch kind {
		case argController:
			if host != nil {
				return host.names()
			}
		case argSession:
			items, _ := sessionItems(store)
			names := make([]string, len(items))
			for i, it := range items {
				names[i] = it.value
			}
			return names
		case argSetting:
			return settingNames()
		case argSwitch:
			return []string{"on", "off"}
		}
		return nil
	}
}
