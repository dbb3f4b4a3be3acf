package tui

import (
	"sync/atomic"

	tea "charm.land/bubbletea/v2"

	"github.com/driftwoodlabs/driftwood/chatopen"
	"github.com/driftwoodlabs/driftwood/controllers"
)

// logBuffer is how many controller log lines may wait for the program;
// more are dropped (and counted) rather than slowing the reply down.
const logBuffer = 256

// controllerHost is the conversation's controller machinery
// (controllers.Host), whose log lines go to a channel the program reads.
type controllerHost struct {
	*controllers.Host
	logs    chan controllers.Log
	dropped atomic.Int64
}

// newControllerHost starts the controllers for model m.
func newControllerHost(m *chatopen.Loaded, dirs []string, cache string) (*controllerHost, error) {
	h := &controllerHost{logs: make(chan controllers.Log, logBuffer)}
	host, err := controllers.NewHost(m.Tok, m.Weights.Config.VocabSize, controllers.HostOptions{Dirs: dirs, CacheDir: cache, Log: h.log})
	if err != nil {
		return nil, err
	}
	h.Host = host
	return h, nil
}

// log is the driver's log callback: it runs on the driver's worker
// goroutine, inside the decode loop, so it never blocks.
func (h *controllerHost) log(l controllers.Log) {
	select {
	case h.logs <- l:
	default:
		h.dropped.Add(1)
	}
}

// controllerLoggedMsg is a log line or fault from the controller.
type controllerLoggedMsg struct {
	controllers.Log
	// dropped counts the lines lost before this one.
	dropped int64
}

// waitLog waits for the next log line; done ends the wait.
func (h *controllerHost) waitLog(done <-chan struct{}) tea.Cmd {
	return func() tea.Msg {
		select {
		case l := <-h.logs:
			return controllerLoggedMsg{Log: l, dropped: h.dropped.Swap(0)}
		case <-done:
			return nil
		}
	}
}

// names lists the controllers found.
func (h *controllerHost) names() []string {
	var out []string
	for _, e := range h.Registry.List() {
		out = append(out, e.Name)
	}
	return out
}

// pickItems lists the controllers to switch to, for the picker.
func (h *controllerHost) pickItems() []pickItem {
	var items []pickItem
	for _, e := range h.Registry.List() {
		if e.Used { // a file that overrides a shipped controller hides it
			items = append(items, pickItem{title: e.Name, desc: e.Source(), value: e.Name})
		}
	}
	return items
}

// close stops the controllers.
func (h *controllerHost) close() { h.Close() }

// controllerCompiledMsg carries a compiled controller to switch to.
type controllerCompiledMsg struct {
	name, arg string
	mod       *controllers.Module
	err       error
}

// get compiles (or finds compiled) a controller, off the UI goroutine: a
// cold compile takes a second or so.
func (h *controllerHost) get(name, arg string) tea.Cmd {
	return func() tea.Msg {
		mod, err := h.Registry.Get(name)
		return controllerCompiledMsg{name: name, arg: arg, mod: mod, err: err}
	}
}
