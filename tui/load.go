package tui

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/driftwoodlabs/driftwood/chatopen"
	"github.com/driftwoodlabs/driftwood/chatsession"
	"github.com/driftwoodlabs/driftwood/config"
	"github.com/driftwoodlabs/driftwood/hub"
)

// loadState is the model being loaded.
type loadState struct {
	name string // as shown
	// line is the download's last progress report; percent its share
	// done (-1 before the first report).
	line     string
	percent  float64
	progress chan progressReportedMsg
	err      error
}

// progressReportedMsg is one progress report of a model download.
type progressReportedMsg struct {
	line    string
	percent float64 // -1 when the line has none
}

// modelLoadedMsg ends a model load.
type modelLoadedMsg struct {
	model *chatopen.Loaded
	chat  *chatsession.Chat
	host  *controllerHost
	// rep says what became of the session to resume; openErr why it
	// could not be taken (the chat starts a new one).
	rep     chatsession.Report
	openErr error
	// notes say what the load passed over (chatopen.Options.Note).
	notes []string
	err   error
}

// reportProgress turns the hub's progress reports into messages; reports
// the program has no time for are dropped.
func reportProgress(ch chan<- progressReportedMsg) func(hub.ProgressReport) {
	return func(r hub.ProgressReport) {
		select {
		case ch <- progressReportedMsg{line: r.String(), percent: r.Fraction()}:
		default:
		}
	}
}

// waitProgress waits for the next progress report (nil when the load is
// over).
func waitProgress(ch <-chan progressReportedMsg) tea.Cmd {
	return func() tea.Msg {
		if msg, ok := <-ch; ok {
			return msg
		}
		return nil
	}
}

// openModel loads the model and starts a conversation and its controller
// host, resuming session (or starting it, "": a new chat).
func openModel(ctx context.Context, name, label, session string, opt Options, hopt hub.Options, progress func(hub.ProgressReport)) modelLoadedMsg {
	var notes []string
	mod, err := chatopen.Open(ctx, name, chatopen.Options{Threads: opt.Config.Threads, OnProgress: progress, Hub: &hopt, NewBackend: opt.NewBackend,
		TokenizerCache: opt.TokenizerCache, Note: func(s string) { notes = append(notes, s) }})
	if err != nil {
		return modelLoadedMsg{err: err}
	}
	mod.Name = label
	if opt.Rebuild != nil {
		mod.Rebuild = opt.Rebuild(mod.Weights)
	}
	if err := mod.CanChat(); err != nil {
		mod.Close()
		return modelLoadedMsg{err: err}
	}
	host, err := newControllerHost(mod, opt.ControllerDirs, opt.CompileCache)
	if err != nil {
		mod.Close()
		return modelLoadedMsg{err: err}
	}
	c := opt.Config
	conv, err := mod.Chat(chatopen.ChatOptions{Context: c.Context, Sampler: c.Sampling, MaxTokens: c.MaxTokens, System: c.System, Controller: host.Host, Prefixes: opt.Prefixes})
	if err == nil && ctx.Err() != nil {
		conv.Close()
		err = ctx.Err() // the program quit meanwhile
	}
	if err != nil {
		host.close()
		mod.Close()
		return modelLoadedMsg{err: err}
	}
	msg := modelLoadedMsg{model: mod, host: host, notes: notes}
	copt := chatsession.Options{Store: opt.Sessions}
	if session != "" {
		msg.chat, msg.rep, msg.openErr = chatsession.Open(conv, copt, session)
	}
	if msg.chat == nil {
		msg.chat = chatsession.New(conv, copt)
	}
	return msg
}

// modelHere says why model name cannot be opened without a download, or
// nil when it can.
func modelHere(name string, opt Options) error {
	_, err := hub.Resolve(name, hubOptions(opt))
	return err
}

// hubOptions are the options' hub settings, or the environment's.
func hubOptions(opt Options) hub.Options {
	if opt.Hub != nil {
		return *opt.Hub
	}
	return hub.OptionsFromEnv()
}

// modelLabel is how a model is shown: a folder or a file (GGUF) by its
// base name, a repo id as it is.
func modelLabel(name string) string {
	if _, err := os.Stat(name); err == nil {
		return filepath.Base(filepath.Clean(name))
	}
	return name
}

// loadAdvice says what to do about a failed load of name.
func loadAdvice(name string, err error) string {
	switch {
	case errors.Is(err, hub.ErrOffline):
		return "The Hugging Face hub cannot be reached: pick a model that is already downloaded, or connect and try again."
	case errors.Is(err, hub.ErrAuth):
		return "The repo is gated or private: accept its license on huggingface.co, set HF_TOKEN (or run `hf auth login`), and try again."
	case errors.Is(err, hub.ErrNotFound):
		return "Check the repo id (org/name), e.g. mlx-community/Llama-3.2-1B-Instruct-4bit."
	case errors.Is(err, fs.ErrNotExist) || filepath.IsAbs(name) || strings.HasPrefix(name, ".") || strings.Count(name, "/") > 1:
		return "Check the path: a model folder holds config.json, *.safetensors and tokenizer.json (`driftwood models` lists the downloaded ones)."
	case errors.Is(err, context.Canceled):
		return "The load was cancelled."
	}
	return "Pick another model, or fix the folder and try again."
}

// modelItems lists the models to offer: the config file's, the ones in the
// Hugging Face cache, ollama's store and LM Studio's folder (hub.Models),
// and the recommended default when it is not cached.
func modelItems(configModel string, hopt hub.Options) ([]pickItem, error) {
	var items []pickItem
	if configModel != "" {
		items = append(items, pickItem{title: configModel, desc: "from the config file", value: configModel})
	}
	found, err := hub.Models(hopt)
	for _, m := range found {
		desc := join(m.Format, hub.FormatSize(m.Size), m.Summary)
		if !m.Runs {
			desc = "cannot run here: " + m.Problem
		}
		items = append(items, pickItem{title: m.Name, desc: desc, value: m.Path, label: m.Name})
	}
	if !slices.ContainsFunc(items, func(it pickItem) bool { return it.label == config.DefaultModel || it.value == config.DefaultModel }) {
		items = append(items, pickItem{title: config.DefaultModel, desc: "recommended · download 695 MB from Hugging Face", value: config.DefaultModel})
	}
	return items, err
}

// fileExists reports whether path exists.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
