package tui

import (
	"sync"
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
	// Switches run one at a time (switching), in the order they were
	// asked for: one that a later switch overtook (its id is not latest)
	// does nothing.
	switching sync.Mutex
	latest    atomic.Int64
	// pace, when set (tests), runs before each switch: a test holds a
	// switch under way.
	pace func()
	// args are what the controllers said of their arguments (UI
	// goroutine only).
	args controllersDescribedMsg
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
	for _, e := range h.Controllers() {
		out = append(out, e.Name)
	}
	return out
}

// pickItems lists the controllers to switch to, for the picker, with
// the arguments they take where described already (describe finds the
// rest).
func (h *controllerHost) pickItems() []pickItem {
	var items []pickItem
	for _, e := range h.Controllers() {
		if e.Used { // a file that overrides a shipped controller hides it
			items = append(items, pickItem{title: e.Name, desc: join(h.args[e.Name].line, e.Source()), value: e.Name})
		}
	}
	return items
}

// argument is what a controller says of its argument (Host.Argument).
type argument struct {
	line     string
	required bool
}

// controllersDescribedMsg carries what the controllers say of their
// arguments.
type controllersDescribedMsg map[string]argument

// describe asks every controller the picker offers what argument it
// takes (a controller never used yet is compiled first), until done
// ends; work runs it off the UI goroutine as work the chat's close waits
// for.
func (h *controllerHost) describe(done <-chan struct{}, work func(func() tea.Msg) tea.Cmd) tea.Cmd {
	entries := h.Controllers()
	return work(func() tea.Msg {
		out := controllersDescribedMsg{}
		for _, e := range entries {
			select {
			case <-done:
				return nil
			default:
			}
			if e.Used {
				line, required := h.Argument(e)
				out[e.Name] = argument{line: line, required: required}
			}
		}
		return out
	})
}

// close stops the controllers.
func (h *controllerHost) close() { h.Close() }

// controllerSwitchedMsg ends a controller switch: the controller runs
// from the next token, or err says why it was refused (the previous one
// still runs). Stale says a later switch overtook it.
type controllerSwitchedMsg struct {
	id        int64
	name, arg string
	err       error
	stale     bool
}

// switchTo makes controller name (off for "") the active one, off the UI
// goroutine: a first use compiles it (a second or so) and every switch
// starts it with its argument first (controllers.Host.Switch). id orders
// the switches: the last one asked for wins.
func (h *controllerHost) switchTo(id int64, name, arg string) tea.Cmd {
	h.latest.Store(id)
	return func() tea.Msg {
		if h.pace != nil {
			h.pace()
		}
		h.switching.Lock()
		defer h.switching.Unlock()
		msg := controllerSwitchedMsg{id: id, name: name, arg: arg}
		switch {
		case h.latest.Load() != id:
			msg.stale = true
		case name == "":
			h.Off()
		default:
			_, msg.err = h.Switch(name, arg)
		}
		return msg
	}
}
