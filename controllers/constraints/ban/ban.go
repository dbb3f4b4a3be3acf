// Package ban is the controller whose reply never contains any of a list
// of words: its argument is a JSON array of strings, matched as
// substrings, ignoring ASCII case ("Cat" bans "cat", "CAT" and
// "concatenate").
//
// The words become an Aho-Corasick automaton over the reply's bytes, so
// that a word split across tokens is caught: a token is masked when its
// bytes, after the text so far, would complete a banned word. Any reply
// may end at any point, so the end-of-turn token is always allowed; no
// other special token is. The controller never stops a reply itself.
package ban

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/driftwoodlabs/driftwood/controllers/sdk"
)

// Controller is the ban controller.
type Controller struct {
	c *sdk.Constraint[int32]
}

// New returns a ban controller.
func New() *Controller { return new(Controller) }

var _ sdk.Describer = (*Controller)(nil)

// Describe says what the argument is; one is required.
func (c *Controller) Describe() (arg string, required bool) {
	return "a JSON array of words, which the reply never contains (ignoring case)", true
}

// Init builds the automaton of the banned words.
func (c *Controller) Init(arg string, v *sdk.Vocab, h sdk.Host) error {
	var words []string
	if err := json.Unmarshal([]byte(arg), &words); err != nil {
		return errors.New("ban: the argument must be a JSON array of strings: " + err.Error())
	}
	a, err := Compile(words)
	if err != nil {
		return fmt.Errorf("ban: %w", err)
	}
	c.c = sdk.NewConstraint(a, v, h, sdk.ConstraintOptions{Name: "ban", NoForce: true})
	return nil
}

// Load fetches the token trie, which every mask is computed over.
func (c *Controller) Load(v *sdk.Vocab) { v.Trie() }

// Begin starts a reply.
func (c *Controller) Begin([]int32) error {
	c.c.Reset()
	return nil
}

// Step masks the tokens that would complete a banned word.
func (c *Controller) Step(appended []int32, r *sdk.Result) { c.c.Step(appended, r) }

// Automaton finds banned words in a byte stream, ignoring ASCII case: an
// sdk.Grammar whose states are the longest suffixes of the text that
// start a banned word.
type Automaton struct {
	next [][256]int32 // transitions of each state
	bad  []bool       // a banned word ends in this state
}

// Compile builds the automaton of words.
func Compile(words []string) (*Automaton, error) {
	a := &Automaton{next: make([][256]int32, 1), bad: make([]bool, 1)}
	for _, w := range words {
		if w == "" {
			return nil, errors.New("an empty word would ban everything")
		}
		s := int32(0)
		for i := range len(w) {
			b := fold(w[i])
			if a.next[s][b] == 0 {
				a.next = append(a.next, [256]int32{})
				a.bad = append(a.bad, false)
				a.next[s][b] = int32(len(a.next) - 1)
			}
			s = a.next[s][b]
		}
		a.bad[s] = true
	}
	// Breadth first, turn the trie into a DFA along failure links.
	fail := make([]int32, len(a.next))
	queue := []int32{}
	for b := range 256 {
		if t := a.next[0][b]; t != 0 {
			queue = append(queue, t)
		}
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		a.bad[s] = a.bad[s] || a.bad[fail[s]]
		for b := range 256 {
			if t := a.next[s][b]; t != 0 {
				fail[t] = a.next[fail[s]][b]
				queue = append(queue, t)
			} else {
				a.next[s][b] = a.next[fail[s]][b]
			}
		}
	}
	return a, nil
}

// fold lowers ASCII letters.
func fold(b byte) byte {
	if b >= 'A' && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}

// Start returns the state before the text.
func (a *Automaton) Start() int32 { return 0 }

// Next returns the state after b, or false when b completes a banned
// word.
func (a *Automaton) Next(s int32, b byte) (int32, bool) {
	t := a.next[s][fold(b)]
	return t, !a.bad[t]
}

// Accepts is always true: a reply may end anywhere.
func (a *Automaton) Accepts(int32) bool { return true }
