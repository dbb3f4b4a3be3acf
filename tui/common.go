package tui

// Common is what every component shares: the styles, the key bindings and
// the window's size.
type Common struct {
	Styles        *Styles
	Keys          *KeyMap
	Width, Height int
}
