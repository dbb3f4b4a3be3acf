package conversation

// Thinking is the thinking switch, the template's enable_thinking: nil
// when the template decides (Qwen3 thinks by default).
func (c *Conversation) Thinking() *bool {
	if c.thinking == nil {
		return nil
	}
	on := *c.thinking
	return &on
}

// SetThinking sets the thinking switch for the next replies (nil: the
// template decides). It changes nothing for a template that does not
// read enable_thinking (SwitchesThinking).
func (c *Conversation) SetThinking(on *bool) {
	c.thinking = nil
	if on != nil {
		v := *on
		c.thinking = &v
	}
	c.changes++
}

// SwitchesThinking reports whether the model's chat template reads the
// thinking switch.
func (c *Conversation) SwitchesThinking() bool { return c.rt.Template.SwitchesThinking() }
