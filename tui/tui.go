// Package tui is Driftwood's chat: a Bubble Tea program with a scrolling
// transcript whose replies render as Markdown while they stream, an input
// box that grows with its text (history, slash commands with completion,
// $EDITOR), a status bar (model, backend, controller, context use, speed)
// and a collapsible pane for controller logs and errors.
//
// The program owns the conversation: it loads the model (or lets the
// user pick one, showing a download's progress), runs the controller host,
// saves and restores sessions, and auto-saves the conversation on quit.
// Each reply runs in a goroutine that streams its tokens back as messages,
// so the interface never waits on the model; the program's context
// cancels it.
//
// The root model, App, routes between two pages, the model page (pick,
// type, load) and the chat page, each a Component (Update, View,
// SetSize). The chat page lays out its components (transcript, input,
// status bar, log pane, pickers) and hands the ends of the work that runs
// off the UI goroutine to the flows that started it: the replies (each
// a replyStream, which takes its tokens into the transcript), the
// controller switches and the sessions. Its slash commands are a table
// of handlers (commandSpecs) over the chat's parts (chatParts), not the
// page.
package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	tea "charm.land/bubbletea/v2"

	"github.com/driftwoodlabs/driftwood/config"
	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/hub"
	"github.com/driftwoodlabs/driftwood/sessions"
)

// Options configures the chat.
type Options struct {
	// Model is a model folder or a Hugging Face repo id (pulled first if
	// it is not cached), as the user named it. Empty means the model of
	// the session to resume, else Config.Model, else a picker of the
	// cached models.
	Model string
	// Config gives the defaults: threads, context window, reply length,
	// system prompt and sampling (its Model is offered in the picker).
	Config config.Config
	// ConfigPath is the config file, where a model chosen in the picker
	// is remembered when Config names none ("" remembers nothing).
	ConfigPath string
	// Session resumes the named session (or starts it, when there is
	// none of that name); Continue resumes the latest one.
	Session  string
	Continue bool
	// Sessions is where sessions are saved.
	Sessions sessions.Store
	// ControllerDirs are searched, in order, for controllers by name;
	// CompileCache keeps compiled controllers ("" for none).
	ControllerDirs []string
	CompileCache   string
	// HistoryFile keeps the inputs sent (empty: DefaultHistoryFile());
	// NoHistory keeps none.
	HistoryFile string
	NoHistory   bool
	// Prefixes is the prefix cache new chats start from (nil: none).
	Prefixes *sessions.Prefixes
	// TokenizerCache keeps decoded tokenizers ("" for none).
	TokenizerCache string
	// Hub resolves repo ids and lists the cached models; nil means
	// hub.OptionsFromEnv().
	Hub *hub.Options
	// Rebuild, when set, gives each loaded model's conversations a way to
	// compute their state again for a save (conversation.Runtime.Rebuild:
	// a model split across ranks that lost one).
	Rebuild func(*engine.Model) func(tokens []int32, window int) (*engine.KVState, error)
	// NewBackend prepares a loaded model for its backend; nil means the
	// CPU backend with Config.Threads. It must not write to the terminal.
	NewBackend func(*engine.Model) (engine.Backend, error)
	// BackendNote, when set, returns what NewBackend had to say (such as
	// why the GPU is unused), shown in the status area once the model
	// is loaded and kept in the log pane; "" for nothing.
	BackendNote func() string
	// Keys and Styles replace the defaults when set.
	Keys   *KeyMap
	Styles func(isDark bool) *Styles
	// Input and Output are the terminal; nil means stdin and stdout.
	Input  io.Reader
	Output io.Writer
}

// Run runs the chat until the user quits (or ctx ends: a signal), then
// saves the conversation to its session (when it changed since the save
// after its last reply) and says how to resume it on the output.
func Run(ctx context.Context, opt Options) error {
	m := New(ctx, opt)
	popts := []tea.ProgramOption{tea.WithContext(ctx)}
	if opt.Input != nil {
		popts = append(popts, tea.WithInput(opt.Input))
	}
	out := opt.Output
	if out == nil {
		out = os.Stdout
	}
	popts = append(popts, tea.WithOutput(out))
	_, err := tea.NewProgram(m, popts...).Run()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		err = nil // interrupted from outside: still save below
	}
	closed, serr := m.Close()
	if serr != nil {
		fmt.Fprintf(out, "driftwood: the conversation was not saved: %v\n", serr)
	} else if closed.Name != "" {
		resume := "driftwood --session " + closed.Name
		if latest, err := opt.Sessions.Latest(); err == nil && latest == closed.Name {
			resume = "driftwood --continue"
		}
		fmt.Fprintf(out, "The conversation is saved as session %s; resume it with: %s\n", closed.Name, resume)
	}
	return errors.Join(err, serr)
}
