// Package maxwords is the controller that ends a reply after a number of
// whitespace-separated words (its argument, a non-negative integer).
// Words are counted as strings.Fields counts them.
//
// It never masks: the model writes freely until whitespace follows the
// last allowed word. At that step the controller takes back the token
// that brought the whitespace, forces whatever that token held before it
// (the end of the last word, say "." of ".\n"), and stops, so that the
// reply ends right after the last word. A limit of 0 stops the reply at
// once.
package maxwords

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/driftwoodlabs/driftwood/controllers/sdk"
)

// Controller is the maxwords controller.
type Controller struct {
	limit  int
	v      *sdk.Vocab
	h      sdk.Host
	text   []byte // the reply so far
	ends   []int  // where each reply token ends in text
	read   int    // bytes of text counted (whole characters)
	words  int    // words begun
	inWord bool
}

// New returns a maxwords controller.
func New() *Controller { return new(Controller) }

var _ sdk.Describer = (*Controller)(nil)

// Describe says what the argument is; one is required.
func (c *Controller) Describe() (arg string, required bool) {
	return "a number: the most words the reply has", true
}

// Init reads the limit.
func (c *Controller) Init(arg string, v *sdk.Vocab, h sdk.Host) error {
	n, err := strconv.Atoi(strings.TrimSpace(arg))
	if err != nil || n < 0 {
		return fmt.Errorf("maxwords: the argument must be a non-negative integer, not %q", arg)
	}
	c.limit, c.v, c.h = n, v, h
	return nil
}

// Begin starts a reply.
func (c *Controller) Begin([]int32) error {
	c.text, c.ends, c.read, c.words, c.inWord = c.text[:0], c.ends[:0], 0, 0, false
	return nil
}

// Step counts the words of the appended tokens, and ends the reply when
// whitespace follows the last allowed word.
func (c *Controller) Step(appended []int32, r *sdk.Result) {
	if c.limit == 0 {
		r.Stop = true
		return
	}
	for _, id := range appended {
		c.text = append(c.text, c.v.Token(id)...)
		c.ends = append(c.ends, len(c.text))
	}
	for c.read < len(c.text) && utf8.FullRune(c.text[c.read:]) {
		ch, size := utf8.DecodeRune(c.text[c.read:])
		switch space := unicode.IsSpace(ch); {
		case space && c.inWord && c.words == c.limit:
			c.cut(c.read, r)
			return
		case space:
			c.inWord = false
		case !c.inWord:
			c.inWord = true
			c.words++
		}
		c.read += size
	}
}

// cut ends the reply at byte p of the text: it takes back the tokens
// from the one that crosses p, and forces what that one held before p.
func (c *Controller) cut(p int, r *sdk.Result) {
	k := 0
	for c.ends[k] <= p {
		k++
	}
	start := 0
	if k > 0 {
		start = c.ends[k-1]
	}
	r.Backtrack = len(c.ends) - k
	if start < p {
		r.Force = c.v.Spell(c.h, c.text[start:p])
	}
	r.Stop = true
}
