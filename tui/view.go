package tui

import "strings"

// View is the transcript (or an overlay), the log pane, the notice, the
// input, the hint line and the status bar.
func (p *chatPage) View() string {
	main := p.transcript.View()
	switch {
	case p.showHelp:
		main = p.helpView()
	case p.picker != nil:
		main = p.picker.View()
	}
	parts := []string{fit(main, p.transcript.Height())}
	if v := p.logs.View(); v != "" {
		parts = append(parts, v)
	}
	parts = append(parts, p.notice.View(), p.input.View(), p.input.HintView(), p.status.View(p.statusInfo()))
	return strings.Join(parts, "\n")
}

// statusInfo gathers what the status bar shows.
func (p *chatPage) statusInfo() statusInfo {
	in := statusInfo{model: p.model.Name, backend: p.model.Backend.Name(), used: p.used, window: p.conv.Window(), compactsAt: p.conv.CompactsAt(), unreadLogs: p.logs.Unread()}
	if mod, arg := p.host.Current(); mod != nil {
		in.controller, in.arg = mod.Name, arg
	}
	if p.stats != nil {
		in.rate = p.stats.GenRate()
	}
	switch {
	case p.reply != nil && p.reply.stopping:
		in.activity = "stopping"
	case p.reply != nil && p.reply.tokens == 0:
		in.activity = "reading the prompt"
	case p.reply != nil:
		in.activity, in.tokens = "generating", p.reply.tokens
	case p.busy != "":
		in.activity = p.busy
	case p.switching != nil && p.switching.name == "":
		in.activity = "turning the controller off"
	case p.switching != nil:
		in.activity = "starting controller " + p.switching.name
	}
	return in
}

// helpView lists the keys and the commands.
func (p *chatPage) helpView() string {
	st := p.common.Styles
	return strings.Join([]string{
		st.Title.Render("Keys") + st.Subtle.Render("  (? or esc closes)"),
		p.input.FullHelp(p.common.Keys),
		"",
		st.Title.Render("Commands"),
		st.Subtle.Render(hangWrap(commandsText(), p.common.Width, commandHang)),
	}, "\n")
}

// fit pads or cuts s to exactly h lines.
func fit(s string, h int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > h {
		lines = lines[:h]
	}
	for len(lines) < h {
		lines = append(lines, "")
	}
	return strings.Join(lines, "\n")
}
