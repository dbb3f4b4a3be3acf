package tui

import (
	"context"
	"strings"
	"sync"
	"time"

	"charm.land/bubbles/v2/progress"
	"charm.land/bubbles/v2/spinner"
	tea "charm.land/bubbletea/v2"

	"github.com/driftwoodlabs/driftwood/chatopen"
	"github.com/driftwoodlabs/driftwood/config"
	"github.com/driftwoodlabs/driftwood/conversation"
	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/hub"
	"github.com/driftwoodlabs/driftwood/sessions"
)

// state is the screen the program is on.
type state int

const (
	statePickModel  state = iota // choosing a model
	stateTypeModel               // typing a model folder or repo id
	stateLoading                 // loading (or downloading) the model
	stateLoadFailed              // the load failed: what to do
	stateChat                    // chatting
)

// Model is the chat program's root model (a tea.Model). It owns the
// conversation; Close must be called after the program ends.
type Model struct {
	ctx    context.Context
	stop   context.CancelFunc
	opt    Options
	hub    hub.Options
	common *Common
	styles func(isDark bool) *Styles
	state  state

	// Set once a model is loaded.
	model *chatopen.Loaded
	conv  *conversation.Conversation
	host  *controllerHost
	// session is the name the conversation saves under ("" until it is
	// first saved), claim this process's hold on it; dirty is set when it
	// changed since.
	session string
	claim   *sessions.Claim
	dirty   bool
	// resumed is set once the session of the options was restored.
	resumed bool
	// picked is the model chosen in the picker (a repo id or a folder)
	// while it loads, to remember in the config file once it has.
	picked string
	// used mirrors the context positions held; stats are the last
	// reply's.
	used  int
	stats *engine.Stats

	transcript transcript
	input      input
	status     statusBar
	logs       logPane
	picker     *picker
	progress   progress.Model
	showHelp   bool
	loading    loadState

	// reply is the reply being generated; busy names other work that
	// holds the conversation (a save, a load).
	reply *replyStream
	busy  string
	// tasks counts the commands running that hold the conversation or a
	// model being loaded; Close waits for them, and once closed is set no
	// more start.
	tasks  sync.WaitGroup
	mu     sync.Mutex
	closed bool

	notice    string
	noticeErr bool
	ladder    ladder
	nextID    int
	// pace, when set (tests), is called on a reply's goroutine before its
	// n-th update is passed on: a test holds the reply at a known token.
	pace func(n int)
}

// New returns the chat's model; ctx bounds its work (replies, loads).
func New(ctx context.Context, opt Options) *Model {
	ctx, stop := context.WithCancel(ctx)
	styles := opt.Styles
	if styles == nil {
		styles = DefaultStyles
	}
	keys := opt.Keys
	if keys == nil {
		keys = DefaultKeyMap()
	}
	var hopt hub.Options
	if opt.Hub != nil {
		hopt = *opt.Hub
	} else {
		hopt = hub.OptionsFromEnv()
	}
	hopt.Progress = nil
	m := &Model{ctx: ctx, stop: stop, opt: opt, hub: hopt, styles: styles,
		common: &Common{Styles: styles(true), Keys: keys, Width: 80, Height: 24}}
	file := opt.HistoryFile
	if file == "" {
		file = DefaultHistoryFile()
	}
	if opt.NoHistory {
		file = ""
	}
	hist, err := loadHistory(file)
	m.transcript = newTranscript(m.common)
	m.input = newInput(m.common, hist, m.completionNames)
	m.status = newStatusBar(m.common)
	m.logs = logPane{common: m.common}
	m.progress = progress.New(progress.WithDefaultBlend())
	if err != nil {
		m.fail(err)
	}
	if opt.Model == "" {
		m.openModelPicker()
	} else {
		m.state, m.loading = stateLoading, loadState{name: modelLabel(opt.Model), percent: -1}
	}
	m.layout()
	return m
}

// Init starts loading the model given in the options.
func (m *Model) Init() tea.Cmd {
	cmds := []tea.Cmd{tea.RequestBackgroundColor, m.input.Focus()}
	if m.opt.Model != "" {
		cmds = append(cmds, m.loadModel(m.opt.Model, ""))
	}
	return tea.Batch(cmds...)
}

// quitWindowEndedMsg ends the wait for a second Ctrl+C.
type quitWindowEndedMsg struct{}

// editorClosedMsg brings back the text edited in $EDITOR.
type editorClosedMsg struct {
	text string
	err  error
}

// Update handles a message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	cmd := m.update(msg)
	m.layout()
	return m, cmd
}

func (m *Model) update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.common.Width, m.common.Height = msg.Width, msg.Height
		return nil
	case tea.BackgroundColorMsg:
		m.restyle(msg.IsDark())
		return nil
	case tea.KeyPressMsg:
		return m.onKey(msg)
	case spinner.TickMsg:
		if m.reply == nil && m.busy == "" && m.state != stateLoading {
			return nil // idle: let the spinner stop
		}
		return m.status.Update(msg)
	case progress.FrameMsg:
		var cmd tea.Cmd
		m.progress, cmd = m.progress.Update(msg)
		return cmd
	case progressReportedMsg:
		return m.onLoadProgress(msg)
	case modelLoadedMsg:
		return m.onModelLoaded(msg)
	case noticeMsg:
		m.say(string(msg))
		return nil
	case tokensArrivedMsg:
		return m.onTokens(msg)
	case replyDoneMsg:
		m.onReplyDone(msg)
		return nil
	case controllerLoggedMsg:
		return m.onLog(msg)
	case controllerCompiledMsg:
		m.onControllerReady(msg)
		return nil
	case sessionSavedMsg:
		return m.afterSaved(msg)
	case sessionLoadedMsg:
		m.afterLoaded(msg)
		return nil
	case editorClosedMsg:
		if msg.err != nil {
			m.fail(msg.err)
		} else {
			m.input.SetValue(msg.text)
		}
		return nil
	case quitWindowEndedMsg:
		if !m.ladder.isArmed(time.Now()) && strings.HasPrefix(m.notice, quitNotice) {
			m.say("")
		}
		return nil
	}
	if m.picker != nil {
		_, cmd := m.picker.Update(msg)
		return cmd
	}
	return m.input.Update(msg)
}

// restyle switches to the styles for a dark or light background.
func (m *Model) restyle(isDark bool) {
	m.common.Styles = m.styles(isDark)
	m.transcript.restyle()
	m.input.restyle()
	if m.picker != nil {
		m.picker.list.Styles = m.common.Styles.List
	}
}

// layout sizes the components to the window and the input's height.
func (m *Model) layout() {
	w, h := m.common.Width, m.common.Height
	m.input.SetSize(w)
	m.status.SetSize(w)
	m.logs.SetSize(w)
	m.progress.SetWidth(min(w-4, 60))
	mainH := max(h-m.logs.Height()-m.input.Height()-3, 1)
	if m.state != stateChat {
		mainH = max(h-1, 1)
	}
	m.transcript.SetSize(w, mainH)
	if m.picker != nil {
		m.picker.SetSize(w, mainH)
	}
}

// onLoadProgress shows a download's progress.
func (m *Model) onLoadProgress(msg progressReportedMsg) tea.Cmd {
	m.loading.line = msg.line
	var cmd tea.Cmd
	if msg.percent >= 0 {
		m.loading.percent = msg.percent
		cmd = m.progress.SetPercent(msg.percent)
	}
	return tea.Batch(cmd, waitProgress(m.loading.progress))
}

// onModelLoaded starts the chat, or shows why the model did not load.
func (m *Model) onModelLoaded(msg modelLoadedMsg) tea.Cmd {
	if msg.err != nil {
		m.state, m.loading.err = stateLoadFailed, msg.err
		return nil
	}
	m.state, m.picker = stateChat, nil
	m.model, m.conv, m.host = msg.model, msg.conv, msg.host
	m.used = m.conv.Tokens()
	m.transcript.label = m.model.Name
	m.transcript.reset(m.conv.Messages())
	m.say("loaded " + m.model.Describe() + " in " + formatMillis(m.model.LoadTime))
	cmds := []tea.Cmd{m.host.waitLog(m.ctx.Done()), m.rememberModel()}
	if !m.resumed {
		m.resumed = true
		cmds = append(cmds, m.resume())
	}
	return tea.Batch(cmds...)
}

// noticeMsg is a line to show in the transcript, from a command.
type noticeMsg string

// rememberModel writes the model chosen in the picker to the config file
// when it names none, so that the next start loads it (off the UI
// goroutine: the write is synced to disk).
func (m *Model) rememberModel() tea.Cmd {
	picked := m.picked
	m.picked = ""
	if picked == "" || m.opt.ConfigPath == "" || m.opt.Config.Model != "" {
		return nil
	}
	m.opt.Config.Model = picked
	path := m.opt.ConfigPath
	return func() tea.Msg {
		switch wrote, err := config.RememberModel(path, picked); {
		case err != nil:
			return noticeMsg("could not remember the model: " + err.Error())
		case wrote:
			return noticeMsg("remembered " + picked + " as your model in " + path)
		}
		return nil
	}
}

// resume restores the session the options name, if any.
func (m *Model) resume() tea.Cmd {
	name := m.opt.Session
	if m.opt.Continue {
		latest, err := m.opt.Sessions.Latest()
		if err != nil {
			m.say(err.Error() + ": starting a new conversation")
			return nil
		}
		name = latest
	}
	if name == "" {
		return nil
	}
	claim, err := m.opt.Sessions.Claim(name)
	if err != nil {
		m.fail(err)
		return nil
	}
	if !claim.Exists() {
		m.keepClaim(claim)
		m.session = name
		m.say("new session " + name)
		return nil
	}
	claim.Release() // loadSession takes it again, and keeps it if the load works
	return m.loadSession(name)
}

// onLog shows a controller's log line; a fault is also an error notice.
func (m *Model) onLog(msg controllerLoggedMsg) tea.Cmd {
	if msg.dropped > 0 {
		m.logs.add(logLine{source: "driftwood", text: thousands(int(msg.dropped)) + " log lines dropped (the controller logs faster than they can be shown)"})
	}
	m.logs.add(logLine{source: msg.Controller, text: msg.Text, fault: msg.Fault})
	if msg.Fault {
		m.notice, m.noticeErr = "controller "+msg.Controller+": "+msg.Text, true
	}
	return m.host.waitLog(m.ctx.Done())
}

// onControllerReady switches to a compiled controller.
func (m *Model) onControllerReady(msg controllerCompiledMsg) {
	if msg.err != nil {
		m.fail(msg.err)
		return
	}
	m.host.Driver.Use(msg.mod, msg.arg)
	m.dirty = true
	text := "controller " + msg.name + " on"
	if m.reply != nil {
		text += " from the next token"
	}
	m.say(text)
}

// say shows a notice above the input ("" clears it).
func (m *Model) say(text string) { m.notice, m.noticeErr = text, false }

// fail shows an error above the input and keeps it in the log pane.
func (m *Model) fail(err error) {
	m.notice, m.noticeErr = err.Error(), true
	m.logs.add(logLine{source: "driftwood", text: err.Error(), fault: true})
}

// work runs fn as a command that Close waits for (fn holds the
// conversation or a model being loaded); after Close it does not run.
func (m *Model) work(fn func() tea.Msg) tea.Cmd {
	return func() tea.Msg {
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			return nil
		}
		m.tasks.Add(1)
		m.mu.Unlock()
		defer m.tasks.Done()
		return fn()
	}
}

// Close ends the chat after the program has stopped: it stops a running
// reply (keeping what it produced), saves the conversation as a session
// when it changed, and frees the model and the controllers. It returns
// the session saved ("" when none was).
func (m *Model) Close() (saved string, err error) {
	m.stop()
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	if m.reply != nil {
		m.reply.wait()
		m.reply, m.dirty = nil, true
	}
	m.tasks.Wait()
	if m.conv == nil {
		return "", nil
	}
	if m.dirty && m.hasTurns() {
		saved = m.sessionName()
		var claim *sessions.Claim
		if claim, err = m.claimFor(saved); err == nil {
			m.keepClaim(claim)
			err = m.conv.Save(claim)
		}
		if err != nil {
			saved = ""
		}
	}
	m.keepClaim(nil)
	m.conv.Close()
	m.host.close()
	m.model.Close()
	m.conv, m.host, m.model = nil, nil, nil
	return saved, err
}
