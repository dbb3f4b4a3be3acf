package tui

import (
	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/list"
	"charm.land/bubbles/v2/textarea"
	"charm.land/lipgloss/v2"
)

// Styles is every style the chat uses, in one place.
type Styles struct {
	// Markdown is the glamour standard style for replies ("dark" or
	// "light").
	Markdown string

	UserLabel      lipgloss.Style
	UserText       lipgloss.Style
	AssistantLabel lipgloss.Style
	SystemText     lipgloss.Style
	Info           lipgloss.Style
	Error          lipgloss.Style
	// ReplyNote is the line under a reply that ended early.
	ReplyNote lipgloss.Style
	// ThinkingLabel heads a reply's think block; ThinkingText is the
	// thinking, set apart from the answer.
	ThinkingLabel lipgloss.Style
	ThinkingText  lipgloss.Style

	// Token view: a token the controller forced, one it restricted, the
	// count of tokens it allowed, and the model's top token where the
	// controller overrode it.
	TokenForced lipgloss.Style
	TokenMasked lipgloss.Style
	TokenCount  lipgloss.Style
	TokenWanted lipgloss.Style
	TokenLegend lipgloss.Style

	Notice      lipgloss.Style
	NoticeError lipgloss.Style
	InputRule   lipgloss.Style
	Hint        lipgloss.Style
	HintActive  lipgloss.Style

	Status       lipgloss.Style
	StatusModel  lipgloss.Style
	StatusItem   lipgloss.Style
	StatusAccent lipgloss.Style
	StatusWarn   lipgloss.Style
	StatusDanger lipgloss.Style

	LogBox   lipgloss.Style
	LogTitle lipgloss.Style
	LogLine  lipgloss.Style
	LogFault lipgloss.Style

	Title  lipgloss.Style
	Subtle lipgloss.Style

	Help     help.Styles
	Textarea textarea.Styles
	List     list.Styles
	ListItem list.DefaultItemStyles
}

// DefaultStyles returns the styles for a dark or a light terminal.
func DefaultStyles(isDark bool) *Styles {
	c := lipgloss.LightDark(isDark)
	var (
		text   = c(lipgloss.Color("#1F2328"), lipgloss.Color("#E6E6E6"))
		dim    = c(lipgloss.Color("#6E7781"), lipgloss.Color("#8B949E"))
		faint  = c(lipgloss.Color("#D0D7DE"), lipgloss.Color("#3B4048"))
		accent = c(lipgloss.Color("#6639BA"), lipgloss.Color("#B392F0"))
		user   = c(lipgloss.Color("#0969DA"), lipgloss.Color("#79C0FF"))
		bot    = c(lipgloss.Color("#1A7F37"), lipgloss.Color("#7EE787"))
		warn   = c(lipgloss.Color("#9A6700"), lipgloss.Color("#E3B341"))
		danger = c(lipgloss.Color("#CF222E"), lipgloss.Color("#FF7B72"))
		cyan   = c(lipgloss.Color("#1B7C83"), lipgloss.Color("#56D4DD"))
		barBg  = c(lipgloss.Color("#EAEEF2"), lipgloss.Color("#21262D"))
	)
	s := &Styles{Markdown: "dark"}
	if !isDark {
		s.Markdown = "light"
	}
	s.UserLabel = lipgloss.NewStyle().Foreground(user).Bold(true)
	s.UserText = lipgloss.NewStyle().Foreground(text).PaddingLeft(1).
		Border(lipgloss.NormalBorder(), false, false, false, true).BorderForeground(user)
	s.AssistantLabel = lipgloss.NewStyle().Foreground(bot).Bold(true)
	s.SystemText = lipgloss.NewStyle().Foreground(dim).Italic(true)
	s.Info = lipgloss.NewStyle().Foreground(dim).PaddingLeft(1).
		Border(lipgloss.NormalBorder(), false, false, false, true).BorderForeground(faint)
	s.Error = lipgloss.NewStyle().Foreground(danger).PaddingLeft(1).
		Border(lipgloss.NormalBorder(), false, false, false, true).BorderForeground(danger)
	s.ReplyNote = lipgloss.NewStyle().Foreground(dim).Italic(true)
	s.ThinkingLabel = lipgloss.NewStyle().Foreground(dim)
	s.ThinkingText = lipgloss.NewStyle().Foreground(dim).Italic(true).PaddingLeft(1).
		Border(lipgloss.NormalBorder(), false, false, false, true).BorderForeground(faint)

	s.TokenForced = lipgloss.NewStyle().Foreground(accent).Underline(true)
	s.TokenMasked = lipgloss.NewStyle().Foreground(cyan)
	s.TokenCount = lipgloss.NewStyle().Foreground(dim)
	s.TokenWanted = lipgloss.NewStyle().Foreground(dim).Strikethrough(true)
	s.TokenLegend = lipgloss.NewStyle().Foreground(dim)

	s.Notice = lipgloss.NewStyle().Foreground(dim)
	s.NoticeError = lipgloss.NewStyle().Foreground(danger)
	s.InputRule = lipgloss.NewStyle().Foreground(faint)
	s.Hint = lipgloss.NewStyle().Foreground(dim)
	s.HintActive = lipgloss.NewStyle().Foreground(accent).Bold(true)

	s.Status = lipgloss.NewStyle().Background(barBg).Foreground(dim)
	s.StatusModel = lipgloss.NewStyle().Background(accent).Foreground(c(lipgloss.Color("#FFFFFF"), lipgloss.Color("#1A1A1A"))).Bold(true).Padding(0, 1)
	s.StatusItem = lipgloss.NewStyle().Background(barBg).Foreground(dim).Padding(0, 1)
	s.StatusAccent = s.StatusItem.Foreground(accent)
	s.StatusWarn = s.StatusItem.Foreground(warn).Bold(true)
	s.StatusDanger = s.StatusItem.Foreground(danger).Bold(true)

	s.LogBox = lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).BorderForeground(faint).Padding(0, 1)
	s.LogTitle = lipgloss.NewStyle().Foreground(dim).Bold(true)
	s.LogLine = lipgloss.NewStyle().Foreground(dim)
	s.LogFault = lipgloss.NewStyle().Foreground(danger)

	s.Title = lipgloss.NewStyle().Foreground(accent).Bold(true)
	s.Subtle = lipgloss.NewStyle().Foreground(dim)

	s.Help = help.DefaultStyles(isDark)
	s.List = list.DefaultStyles(isDark)
	s.List.Title = s.Title
	s.ListItem = list.NewDefaultItemStyles(isDark)
	s.Textarea = textarea.DefaultStyles(isDark)
	for _, st := range []*textarea.StyleState{&s.Textarea.Focused, &s.Textarea.Blurred} {
		st.CursorLine = lipgloss.NewStyle()
		st.Prompt = lipgloss.NewStyle().Foreground(accent)
		st.Placeholder = lipgloss.NewStyle().Foreground(dim)
	}
	return s
}
