package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/driftwoodlabs/driftwood/chatopen"
	"github.com/driftwoodlabs/driftwood/engine"
)

// printer prints run's reply: as text (replyPrinter), as JSON lines, or
// as token ids when the model has no tokenizer.
type printer struct {
	out    io.Writer
	json   *json.Encoder
	reply  *replyPrinter // text, without --json
	tokens *replyText    // with --json: each token's text
}

// newPrinter prints the reply to out; cs is the controller host of the
// reply, nil when there is none.
func newPrinter(l *chatopen.Loaded, out io.Writer, asJSON bool, cs *controllerSet) *printer {
	p := &printer{out: out}
	switch {
	case l.Tok == nil:
	case asJSON:
		p.tokens = newReplyText(l.Tok)
	default:
		p.reply = newReplyPrinter(out, l.Tok, cs)
	}
	if asJSON {
		p.json = json.NewEncoder(out)
		p.json.SetEscapeHTML(false)
	}
	return p
}

// tokenLine is one line of `run --json`.
type tokenLine struct {
	ID int32 `json:"id"`
	// Text is what the token added to the reply's text: taking back a
	// token drops its line's text, and a character split across tokens
	// comes with the token that completes it, so that the texts of the
	// lines kept, joined, are the reply's.
	Text      string `json:"text"`
	Forced    bool   `json:"forced,omitempty"`
	Backtrack int    `json:"backtrack,omitempty"`
	// Wanted is the model's top token where the controller overrode it.
	Wanted *int32 `json:"wanted,omitempty"`
}

func (p *printer) event(e engine.Event) error {
	switch {
	case p.reply != nil:
		return p.reply.Event(e)
	case p.json != nil:
		line := tokenLine{ID: e.Token, Forced: e.Forced, Backtrack: e.Backtrack}
		if p.tokens != nil {
			line.Text = p.tokens.apply(e)
		}
		if e.Overrode {
			line.Wanted = &e.Wanted
		}
		return p.json.Encode(line)
	}
	_, err := fmt.Fprintf(p.out, "%d ", e.Token)
	return err
}

func (p *printer) flush() {
	switch {
	case p.reply != nil:
		p.reply.Finish()
	case p.json != nil:
		// A character the reply's end cut short comes as U+FFFD on a
		// last line of no token (id -1), so that the lines' texts still
		// join into the stats' text.
		if p.tokens != nil {
			if tail := p.tokens.finish(); tail != "" {
				p.json.Encode(tokenLine{ID: -1, Text: tail})
			}
		}
	default:
		io.WriteString(p.out, "\n")
	}
}

// text is the reply's final text ("" without a tokenizer).
func (p *printer) text() string {
	switch {
	case p.reply != nil:
		return p.reply.Text()
	case p.tokens != nil:
		return string(p.tokens.text)
	}
	return ""
}

// statsLine is the final line of `run --json`.
type statsLine struct {
	Stats struct {
		PromptTokens int     `json:"prompt_tokens"`
		PromptTPS    float64 `json:"prompt_tok_per_s"`
		GenTokens    int     `json:"gen_tokens"`
		GenTPS       float64 `json:"gen_tok_per_s"`
		LoadSeconds  float64 `json:"load_s"`
		Stop         string  `json:"stop"`
		Backend      string  `json:"backend"`
		// Seed is the sampler's seed: --seed with it reproduces the reply.
		Seed uint64 `json:"seed"`
		// Overrides counts the tokens the controller chose over the
		// model's top token.
		Overrides int `json:"overrides"`
		// ControllerError is why the requested controller was refused or
		// switched off during the reply ("NAME: reason"); absent when it
		// constrained the whole reply.
		ControllerError string `json:"controller_error,omitempty"`
		// Text is the reply's final text, what run prints without
		// --json: the tokens taken back are not in it.
		Text string `json:"text"`
	} `json:"stats"`
}

// printStats prints the reply's stats; fail, when not nil, is the
// controller's refusal or fault, and text the reply's final text.
func printStats(out, errOut io.Writer, asJSON bool, st engine.Stats, l *chatopen.Loaded, fail *controllerError, text string) error {
	if asJSON {
		var s statsLine
		s.Stats.PromptTokens, s.Stats.PromptTPS = st.PromptTokens, st.PromptRate()
		s.Stats.GenTokens, s.Stats.GenTPS = st.GenTokens, st.GenRate()
		s.Stats.LoadSeconds, s.Stats.Stop, s.Stats.Backend = l.LoadTime.Seconds(), string(st.Reason), l.Backend.Name()
		s.Stats.Seed, s.Stats.Overrides, s.Stats.Text = st.Seed, st.Overrides, text
		if fail != nil {
			s.Stats.ControllerError = fail.Controller + ": " + fail.Text
		}
		return json.NewEncoder(out).Encode(s)
	}
	_, err := fmt.Fprintf(errOut, "%v · seed %d · load %.2fs · %s\n", st, st.Seed, l.LoadTime.Seconds(), l.Backend.Name())
	return err
}
