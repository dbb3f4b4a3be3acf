package tui

import (
	"context"
	"fmt"
	"sync"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/progress"
	tea "charm.land/bubbletea/v2"

	"github.com/driftwoodlabs/driftwood/chatsession"
)

// App is the chat program's root model (a tea.Model). It routes between
// two pages: the model page until a model is loaded, then the chat page,
// which owns the conversation. It keeps what is above both: the window's
// size and styles, the notice line, the Ctrl+C ladder, and the work that
// Close waits for. Close must be called after the program ends.
type App struct {
	ctx    context.Context
	stop   context.CancelFunc
	opt    Options
	common *Common
	styles func(isDark bool) *Styles
	notice *noticeLine
	logs   *logPane
	hist   *history

	models *modelPage
	chat   *chatPage // nil until a model is loaded

	ladder ladder
	// tasks counts the commands running that hold the conversation or a
	// model being loaded; Close waits for them, and once closed is set no
	// more start.
	tasks  sync.WaitGroup
	mu     sync.Mutex
	closed bool
	// pace, when set (tests), is called on a reply's goroutine before its
	// n-th update is passed on: a test holds the reply at a known token;
	// switchPace before each controller switch.
	pace       func(n int)
	switchPace func()
}

// New returns the chat's root model; ctx bounds its work (replies, loads).
func New(ctx context.Context, opt Options) *App {
	ctx, stop := context.WithCancel(ctx)
	styles := opt.Styles
	if styles == nil {
		styles = DefaultStyles
	}
	keys := opt.Keys
	if keys == nil {
		keys = DefaultKeyMap()
	}
	hopt := hubOptions(opt)
	hopt.Progress = nil
	c := &Common{Styles: styles(true), Keys: keys, Width: 80, Height: 24}
	m := &App{ctx: ctx, stop: stop, opt: opt, styles: styles, common: c, logs: &logPane{common: c}}
	m.notice = &noticeLine{common: c, logs: m.logs}
	file := opt.HistoryFile
	if file == "" {
		file = DefaultHistoryFile()
	}
	if opt.NoHistory {
		file = ""
	}
	hist, err := loadHistory(file)
	m.hist = hist
	if err != nil {
		m.notice.fail(err)
	}
	modelInput := newInput(c, hist, argNames(opt.Sessions, nil))
	modelInput.SetPlaceholder("a model folder, or a Hugging Face repo id")
	m.models = newModelPage(c, m.notice, ctx, opt, hopt, m.work, modelInput)
	m.layout()
	return m
}

// Init starts loading the model given in the options.
func (m *App) Init() tea.Cmd {
	return tea.Batch(tea.RequestBackgroundColor, m.models.Init())
}

// quitWindowEndedMsg ends the wait for a second Ctrl+C.
type quitWindowEndedMsg struct{}

// Update handles a message.
func (m *App) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	cmd := m.update(msg)
	m.layout()
	return m, cmd
}

func (m *App) update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.common.Width, m.common.Height = msg.Width, msg.Height
		return nil
	case tea.BackgroundColorMsg:
		m.restyle(msg.IsDark())
		return nil
	case tea.KeyPressMsg:
		return m.onKey(msg)
	case progress.FrameMsg, progressReportedMsg:
		return m.models.Update(msg)
	case modelLoadedMsg:
		return m.onModelLoaded(msg)
	case sessionModelMsg:
		return m.onSessionModel(msg)
	case noticeMsg:
		m.notice.say(string(msg))
		return nil
	case quitWindowEndedMsg:
		if !m.ladder.isArmed(time.Now()) {
			m.notice.clearQuit()
		}
		return nil
	}
	return m.page().Update(msg)
}

// page is the page shown: the chat once a model is loaded, else the
// model page.
func (m *App) page() Component {
	if m.chat != nil {
		return m.chat
	}
	return m.models
}

// onModelLoaded starts the chat page, or shows why the model did not
// load.
func (m *App) onModelLoaded(msg modelLoadedMsg) tea.Cmd {
	if msg.err != nil {
		m.models.failed(msg.err)
		return nil
	}
	chat, cmd := newChatPage(chatDeps{common: m.common, notice: m.notice, logs: m.logs, hist: m.hist,
		ctx: m.ctx, opt: m.opt, work: m.work, pace: m.pace, switchPace: m.switchPace}, msg)
	m.chat = chat
	for _, note := range msg.notes {
		m.logs.add(logLine{source: "driftwood", text: note})
	}
	if m.opt.BackendNote != nil {
		if note := m.opt.BackendNote(); note != "" {
			m.notice.say(note)
			m.logs.add(logLine{source: "driftwood", text: note})
		}
	}
	return tea.Batch(cmd, m.models.remember())
}

// onSessionModel closes the chat and opens the model the session to load
// was made with, to resume it there.
func (m *App) onSessionModel(msg sessionModelMsg) tea.Cmd {
	if _, err := m.chat.close(); err != nil {
		m.notice.fail(fmt.Errorf("the conversation was not saved: %w", err))
	} else {
		m.notice.say(join(savedAs(msg.saved), "session "+msg.target.Name+" was made with "+msg.model.String()+": loading it"))
	}
	m.chat = nil
	return m.models.loadSession(msg.target, msg.model)
}

// onKey handles the keys of every page: Ctrl+C here, the rest in the
// page shown.
func (m *App) onKey(k tea.KeyPressMsg) tea.Cmd {
	if key.Matches(k, m.common.Keys.Interrupt) {
		return m.interrupt()
	}
	m.ladder.disarm()
	m.notice.clearQuit()
	return m.page().Update(k)
}

// interrupt climbs the Ctrl+C ladder.
func (m *App) interrupt() tea.Cmd {
	hasInput, replying := m.models.typing(), false
	if m.chat != nil {
		hasInput, replying = m.chat.hasInput(), m.chat.replying()
	}
	switch m.ladder.press(time.Now(), hasInput, replying) {
	case interruptClear:
		if m.chat != nil {
			m.chat.clearInput()
		} else {
			m.models.clearInput()
		}
		return nil
	case interruptStop:
		m.chat.stopReply()
		return nil
	case interruptQuit:
		return tea.Quit
	}
	if m.chat != nil {
		m.notice.say(quitNotice + " (the conversation is saved)")
	} else {
		m.notice.say(quitNotice)
	}
	return tea.Tick(quitWindow, func(time.Time) tea.Msg { return quitWindowEndedMsg{} })
}

// restyle switches to the styles for a dark or light background.
func (m *App) restyle(isDark bool) {
	m.common.Styles = m.styles(isDark)
	m.models.restyle()
	if m.chat != nil {
		m.chat.restyle()
	}
}

// layout sizes the page shown to the window.
func (m *App) layout() { m.page().SetSize(m.common.Width, m.common.Height) }

// View draws the page shown.
func (m *App) View() tea.View {
	v := tea.NewView(m.page().View())
	v.WindowTitle = "driftwood"
	if m.chat != nil {
		v.WindowTitle += " · " + m.chat.model.Name
	}
	v.AltScreen = true
	return v
}

// work runs fn as a command that Close waits for (fn holds the
// conversation or a model being loaded); after Close it does not run.
func (m *App) work(fn func() tea.Msg) tea.Cmd {
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
// reply (keeping what it produced), saves the conversation to its session
// when it changed, releases the session, and frees the model and the
// controllers. It says which session holds the chat.
func (m *App) Close() (chatsession.Closed, error) {
	m.stop()
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	if m.chat == nil {
		m.tasks.Wait()
		return chatsession.Closed{}, nil
	}
	m.chat.stopAndWait()
	m.tasks.Wait()
	closed, err := m.chat.close()
	m.chat = nil
	return closed, err
}
