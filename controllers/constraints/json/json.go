// Package json is the controller whose reply is one JSON value. Its
// argument is empty, for any value, or a JSON schema, of which it
// enforces a common subset: type (object, array, string, number,
// integer, boolean, null, or a list of them), properties, required,
// additionalProperties (false when "properties" is given and it is not:
// stricter than JSON Schema, so that a model cannot wander into keys of
// its own), items, tuples (prefixItems with items for the rest, or
// items as an array with additionalItems, one form per document; false
// after them ends the tuple), minItems, maxItems, minLength, maxLength, enum,
// const (of any JSON value, checked against the rest of its schema),
// $ref to any JSON pointer within the document (a chain of $refs too;
// recursion is bounded by the nesting limit below), and:
//
//   - pattern, ECMA-262's syntax searched for in the decoded string
//     (unanchored, as JSON Schema says), through the regex controller's
//     DFA: \w, \d and \s read so that engines of every dialect agree,
//     \b, lookarounds and backreferences refused; the string may use
//     the one-letter escapes and \u00XX for control characters, no other
//     \u escape; a character is taken only where a match can still be
//     reached within maxLength;
//   - format date, time, date-time, uuid, ipv4 and email, as patterns
//     that take a subset of the valid strings (no 29 February, no leap
//     second, simple addresses only); other formats are refused;
//   - minimum, maximum, exclusiveMinimum, exclusiveMaximum and
//     multipleOf (m×10^-k, m up to 1000), exactly, by an automaton over
//     the number's decimal digits; such a number is written without an
//     exponent, a multiple of an integer without a fraction, and with no
//     more fraction digits than multipleOf's;
//   - allOf, and a $ref beside other keywords, merged into one schema:
//     types and enums intersected, properties and required joined (a
//     property in both must be valid for both; one in a single branch
//     must also be valid for the other's additionalProperties), the
//     tighter bounds kept, items merged (tuples item by item);
//   - anyOf, one schema per kind of value (object, array, string,
//     number, boolean, null), told apart by the value's first byte;
//     several branches of one kind are combined only where that is
//     exact: numbers, strings (and arrays of the same items) of lengths
//     that join, enums, and objects that declare a common property with
//     const or enum values, which then comes first and chooses the
//     branch (a "discriminator");
//   - oneOf, as anyOf, where the branches are provably disjoint: of
//     different types by JSON Schema's rules (a branch without "type"
//     takes every kind), enums of distinct values (a value in two
//     branches is left out), objects discriminated by distinct values.
//     Any other oneOf is refused, saying why, rather than enforced as
//     anyOf: an instance valid for two branches is invalid for oneOf.
//
// An object schema may declare up to 4096 properties (beyond 64 its
// property sets are interned bit sets instead of one word).
//
// A keyword beside anyOf or oneOf is distributed over its branches.
// What cannot be combined exactly is refused with a message naming the
// branches; other keywords are refused by name, annotations (title,
// description, examples...) ignored. A property whose schema accepts
// nothing (false, an enum with no valid value) simply cannot come.
//
// The reply is read by a byte-level pushdown recogniser: keys are not
// repeated, required keys come before the closing brace, numbers are at
// most 20 characters, strings are well-formed UTF-8 with valid escapes,
// whitespace between tokens comes in runs of at most 20 bytes (spaces
// and tabs, after an optional newline), and there is none before or
// after the value, so that every reply ends. Enum and const values must be
// written as compact JSON (encoding/json's form). Masks are cached by
// the parser's full state (its container stack is interned), and bytes
// that every continuation shares are forced.
//
// The reply stops as soon as the value is complete. A top-level number
// or enum value that could still grow (12 → 123) allows the end-of-turn
// token instead.
package json

import (
	"fmt"
	"strings"

	"github.com/driftwoodlabs/driftwood/controllers/sdk"
)

// Controller is the JSON controller.
type Controller struct {
	c *sdk.Constraint[state]
}

// New returns a JSON controller.
func New() *Controller { return new(Controller) }

// Load sorts the vocabulary's tokens into the grammar's classes (plain
// string characters), which do not depend on the schema.
func (c *Controller) Load(v *sdk.Vocab) { v.PrepareClasses(newGrammar()) }

var _ sdk.Describer = (*Controller)(nil)

// Describe says what the argument is; none is needed.
func (c *Controller) Describe() (arg string, required bool) {
	return "empty for any JSON value, or a JSON schema that the reply's value is valid for", false
}

// Init compiles the schema.
func (c *Controller) Init(arg string, v *sdk.Vocab, h sdk.Host) error {
	g := newGrammar()
	if strings.TrimSpace(arg) == "" {
		g.depths()
	} else {
		root, err := g.compileSchema(arg)
		if err != nil {
			return fmt.Errorf("json: %w", err)
		}
		g.root = root
	}
	c.c = sdk.NewConstraint(g, v, h, sdk.ConstraintOptions{Name: "json"})
	return nil
}

// Begin starts a reply.
func (c *Controller) Begin([]int32) error {
	c.c.Reset()
	return nil
}

// Step masks the tokens that cannot continue a valid value.
func (c *Controller) Step(appended []int32, r *sdk.Result) { c.c.Step(appended, r) }
