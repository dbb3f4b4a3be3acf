// Package regex is the controller whose reply must match a Go regular
// expression as a whole (its argument, in regexp/syntax's Perl flavour,
// as regexp.Compile takes it; implicitly anchored at both ends).
//
// The expression becomes a lazily built byte-level DFA (see DFA) that an
// sdk.Constraint walks over the vocabulary's token trie, caching the
// mask of every state it meets. Tokens are allowed when their bytes keep
// a match possible; special tokens are never allowed, except the
// end-of-turn token where the text so far matches and more could
// follow. Where the text matches and nothing can follow, the reply is
// stopped. Where every continuation starts with the same characters
// (a literal stretch of the expression), they are forced. Valid UTF-8
// only: a reply never contains a byte sequence that is not.
package regex

import (
	"fmt"

	"github.com/driftwoodlabs/driftwood/controllers/sdk"
)

// Controller is the regex controller.
type Controller struct {
	name string
	arg  string // what the argument is, for Describe
	expr func(arg string) (string, error)
	c    *sdk.Constraint[*State]
}

// New returns a regex controller.
func New() *Controller {
	return &Controller{name: "regex", arg: "a Go regular expression, which the whole reply matches"}
}

// NewDerived returns a controller named name whose regular expression is
// expr(arg): other constraints that are regular languages (a list of
// choices, say) use it. argDoc says what the argument is (Describe).
func NewDerived(name, argDoc string, expr func(arg string) (string, error)) *Controller {
	return &Controller{name: name, arg: argDoc, expr: expr}
}

var _ sdk.Describer = (*Controller)(nil)

// Describe says what the argument is; one is required (an empty
// expression would allow only an empty reply).
func (c *Controller) Describe() (arg string, required bool) { return c.arg, true }

// Init compiles the expression.
func (c *Controller) Init(arg string, v *sdk.Vocab, h sdk.Host) error {
	expr := arg
	if c.expr != nil {
		var err error
		if expr, err = c.expr(arg); err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
	}
	d, err := Compile(expr)
	if err != nil {
		return fmt.Errorf("%s: %w", c.name, err)
	}
	c.c = sdk.NewConstraint(d, v, h, sdk.ConstraintOptions{Name: c.name})
	return nil
}

// Load fetches the token trie, which every mask is computed over.
func (c *Controller) Load(v *sdk.Vocab) { v.Trie() }

// Begin starts a reply.
func (c *Controller) Begin([]int32) error {
	c.c.Reset()
	return nil
}

// Step masks the tokens that cannot continue a match.
func (c *Controller) Step(appended []int32, r *sdk.Result) { c.c.Step(appended, r) }
