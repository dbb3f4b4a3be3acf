package tui

import (
	"cmp"
	"context"
	"path/filepath"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/progress"
	"charm.land/bubbles/v2/spinner"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/driftwoodlabs/driftwood/chatsession"
	"github.com/driftwoodlabs/driftwood/config"
	"github.com/driftwoodlabs/driftwood/hub"
	"github.com/driftwoodlabs/driftwood/sessions"
)

// modelState is the model page's screen.
type modelState int

const (
	statePickModel  modelState = iota // choosing a model
	stateTypeModel                    // typing a model folder or repo id
	stateLoading                      // loading (or downloading) the model
	stateLoadFailed                   // the load failed: what to do
)

// modelPage is the page before the chat: a picker of the known models, a
// prompt for a folder or repo id, the load with a download's progress,
// and what to do when the load failed. It ends with a modelLoadedMsg for
// the root.
type modelPage struct {
	common   *Common
	notice   *noticeLine
	ctx      context.Context
	opt      Options
	hub      hub.Options
	work     func(func() tea.Msg) tea.Cmd
	state    modelState
	picker   *picker
	input    input
	spinner  spinner.Model
	progress progress.Model
	loading  loadState
	// picked is the model chosen (a repo id or a folder) while it loads,
	// to remember in the config file once it has.
	picked string
	// start is the model to load first ("": the picker) and the session
	// to resume on whatever model loads.
	start startup
}

func newModelPage(c *Common, n *noticeLine, ctx context.Context, opt Options, hopt hub.Options, work func(func() tea.Msg) tea.Cmd, in input) *modelPage {
	p := &modelPage{common: c, notice: n, ctx: ctx, opt: opt, hub: hopt, work: work, input: in,
		spinner: spinner.New(spinner.WithSpinner(spinner.MiniDot)), progress: progress.New(progress.WithDefaultBlend())}
	start, note := planStart(opt)
	p.start = start
	if note != "" {
		n.say(note)
	}
	if start.model == "" {
		p.openPicker()
	} else {
		p.state, p.loading = stateLoading, loadState{name: cmp.Or(start.label, modelLabel(start.model)), percent: -1}
	}
	return p
}

// startup is what the chat opens first.
type startup struct {
	// model is the model to load ("" offers the picker), label how it is
	// shown; session is the session to resume (or start) on it.
	model, label, session string
	// target is the session read before the load; fromSession says the
	// model is the session's own.
	target      chatsession.Target
	fromSession bool
}

// planStart chooses the first model and session: the session that
// --session or --continue names, on the model --model names, else the
// session's own model, else the config's, else the picker. note says
// what was chosen when the user did not name it, or why no session is
// resumed.
func planStart(opt Options) (s startup, note string) {
	s.model = opt.Model
	if opt.Session != "" || opt.Continue {
		t, err := chatsession.Find(opt.Sessions, opt.Session, opt.Continue)
		if err != nil {
			return startup{model: cmp.Or(opt.Model, opt.Config.Model)}, err.Error() + ": starting a new conversation"
		}
		s.session, s.target = t.Name, t
	}
	if src, ok := s.target.Model(); ok && s.model == "" {
		s.model, s.label, s.fromSession = src.Name(), src.String(), true
		note = "session " + s.target.Name + " was made with " + src.String() + ": loading it"
	}
	if s.model == "" {
		s.model = opt.Config.Model
	}
	return s, note
}

// Init focuses the prompt and starts loading the first model.
func (p *modelPage) Init() tea.Cmd {
	if p.start.model == "" {
		return p.input.Focus()
	}
	return tea.Batch(p.input.Focus(), p.load(p.start.model, p.start.label))
}

// loadSession loads the model a session was made with and resumes the
// session on it (/load of a session made with another model).
func (p *modelPage) loadSession(target chatsession.Target, model sessions.ModelSource) tea.Cmd {
	p.start = startup{model: model.Name(), label: model.String(), session: target.Name, target: target, fromSession: true}
	return p.load(p.start.model, p.start.label)
}

// SetSize sizes the picker, the prompt and the progress bar.
func (p *modelPage) SetSize(w, h int) {
	p.input.SetSize(w)
	p.progress.SetWidth(min(w-4, 60))
	if p.picker != nil {
		p.picker.SetSize(w, max(h-1, 1))
	}
}

// restyle applies new styles.
func (p *modelPage) restyle() {
	p.input.restyle()
	if p.picker != nil {
		p.picker.restyle()
	}
}

// Update handles the keys of each screen and the load's progress.
func (p *modelPage) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		return p.onKey(msg)
	case spinner.TickMsg:
		if p.state != stateLoading {
			return nil // not loading: let the spinner stop
		}
		var cmd tea.Cmd
		p.spinner, cmd = p.spinner.Update(msg)
		return cmd
	case progress.FrameMsg:
		var cmd tea.Cmd
		p.progress, cmd = p.progress.Update(msg)
		return cmd
	case progressReportedMsg:
		p.loading.line = msg.line
		var cmd tea.Cmd
		if msg.percent >= 0 {
			p.loading.percent = msg.percent
			cmd = p.progress.SetPercent(msg.percent)
		}
		return tea.Batch(cmd, waitProgress(p.loading.progress))
	}
	if p.picker != nil {
		_, cmd := p.picker.Update(msg)
		return cmd
	}
	return p.input.Update(msg)
}

func (p *modelPage) onKey(k tea.KeyPressMsg) tea.Cmd {
	keys := p.common.Keys
	switch p.state {
	case statePickModel:
		if p.picker == nil {
			return nil
		}
		if !p.picker.filtering() && key.Matches(k, keys.TypeModel) {
			p.picker, p.state = nil, stateTypeModel
			p.input.Reset()
			return nil
		}
		chosen, cmd := p.picker.Update(k)
		if chosen == nil {
			return cmd
		}
		p.picker = nil
		p.picked = cmp.Or(chosen.label, chosen.value) // a repo id rather than its snapshot folder
		return p.load(chosen.value, chosen.label)
	case stateTypeModel:
		switch {
		case key.Matches(k, keys.Send):
			name := strings.TrimSpace(p.input.Value())
			if name == "" {
				return nil
			}
			p.input.Reset()
			p.picked = name
			if abs, err := filepath.Abs(name); err == nil && fileExists(abs) {
				p.picked = abs // a folder, remembered from wherever the next start is
			}
			return p.load(name, "")
		case key.Matches(k, keys.Back):
			p.openPicker()
			return nil
		}
		return p.input.Update(k)
	case stateLoadFailed:
		if key.Matches(k, keys.Choose) {
			p.notice.say("")
			p.openPicker()
		}
	}
	return nil
}

// openPicker offers the known models, or asks for one to be typed when
// there are none.
func (p *modelPage) openPicker() {
	items, err := modelItems(p.opt.Config.Model, p.hub)
	if err != nil {
		p.notice.fail(err)
	}
	if len(items) == 0 {
		p.state, p.picker = stateTypeModel, nil
		p.notice.say("no models in the Hugging Face cache (" + p.hub.CacheDir + "), ollama's store, LM Studio's folder or the config yet")
		return
	}
	p.state = statePickModel
	p.picker = newPicker(p.common, pickModel, "Choose a model", items)
}

// load starts loading a model; label, when not empty, is the name shown
// for it.
func (p *modelPage) load(name, label string) tea.Cmd {
	if label == "" {
		label = modelLabel(name)
	}
	ch := make(chan progressReportedMsg, 16)
	p.state = stateLoading
	p.loading = loadState{name: label, percent: -1, progress: ch}
	ctx, opt, hopt, start := p.ctx, p.opt, p.hub, p.start
	load := p.work(func() tea.Msg {
		defer close(ch)
		msg := openModel(ctx, name, label, start.session, opt, hopt, reportProgress(ch))
		if msg.err != nil && start.fromSession && name == start.model {
			msg.err = start.target.ModelMissing(msg.err)
		}
		return msg
	})
	return tea.Batch(load, waitProgress(ch), p.spinner.Tick)
}

// failed shows why the model did not load.
func (p *modelPage) failed(err error) { p.state, p.loading.err = stateLoadFailed, err }

// typing reports whether the prompt for a model holds text.
func (p *modelPage) typing() bool { return p.state == stateTypeModel && p.input.Value() != "" }

// clearInput empties the prompt.
func (p *modelPage) clearInput() { p.input.Reset() }

// remember writes the model chosen to the config file when it names
// none, so that the next start loads it (off the UI goroutine: the write
// is synced to disk).
func (p *modelPage) remember() tea.Cmd {
	picked := p.picked
	p.picked = ""
	if picked == "" || p.opt.ConfigPath == "" || p.opt.Config.Model != "" {
		return nil
	}
	p.opt.Config.Model = picked
	path := p.opt.ConfigPath
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

// View draws the screen.
func (p *modelPage) View() string {
	st := p.common.Styles
	switch p.state {
	case statePickModel:
		return p.picker.View() + "\n" + hintLine(p.common, "enter load · / filter · tab type a folder or repo id · ctrl+c quit")
	case stateTypeModel:
		lines := []string{
			st.Title.Render("Which model?"),
			"",
			"Type a model folder, or a Hugging Face repo id to download it",
			st.Subtle.Render("(e.g. mlx-community/Llama-3.2-1B-Instruct-4bit; `driftwood models` lists the downloaded ones)."),
			"",
			p.input.View(),
			"",
			hintLine(p.common, "enter load · esc the list of models · ctrl+c quit"),
		}
		if p.notice.Text() != "" {
			lines = append(lines, p.notice.View())
		}
		return strings.Join(lines, "\n")
	case stateLoading:
		lines := []string{"", "  " + p.spinner.View() + " " + st.Title.Render("Loading "+p.loading.name)}
		if p.loading.percent >= 0 {
			lines = append(lines, "", "  "+p.progress.View())
		}
		if p.loading.line != "" {
			lines = append(lines, "  "+st.Subtle.Render(ansi.Truncate(p.loading.line, p.common.Width-2, "…")))
		}
		return strings.Join(lines, "\n")
	}
	w := max(p.common.Width-4, 20)
	return strings.Join([]string{
		"",
		"  " + st.Title.Render("Could not load "+p.loading.name),
		"",
		indent(st.NoticeError.Width(w).Render(p.loading.err.Error()), "  "),
		"",
		indent(lipgloss.NewStyle().Width(w).Render(loadAdvice(p.loading.name, p.loading.err)), "  "),
		"",
		hintLine(p.common, "  enter choose another model · ctrl+c quit"),
	}, "\n")
}

// hintLine is a key hint in the hint style.
func hintLine(c *Common, s string) string {
	return c.Styles.Hint.Render(ansi.Truncate(s, c.Width, "…"))
}
