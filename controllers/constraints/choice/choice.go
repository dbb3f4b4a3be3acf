// Package choice is the controller whose reply is exactly one of a list
// of strings: its argument is a JSON array of strings.
//
// The list becomes the regular expression that matches exactly those
// strings, run by the regex controller: the reply is masked to the
// tokens that continue some choice, the rest of a choice is forced as
// soon as only one remains, and the reply stops when it has spelled a
// choice that no other choice extends (when one does, the end-of-turn
// token is allowed there as well).
package choice

import (
	"encoding/json"
	"errors"
	"regexp"
	"strings"

	"github.com/driftwoodlabs/driftwood/controllers/constraints/regex"
	"github.com/driftwoodlabs/driftwood/controllers/sdk"
)

// New returns a choice controller.
func New() sdk.Controller {
	return regex.NewDerived("choice", "a JSON array of strings, exactly one of which the reply is", Expr)
}

// Expr returns the regular expression that matches exactly the strings
// of the JSON array arg.
func Expr(arg string) (string, error) {
	var choices []string
	if err := json.Unmarshal([]byte(arg), &choices); err != nil {
		return "", errors.New("the argument must be a JSON array of strings: " + err.Error())
	}
	if len(choices) == 0 {
		return "", errors.New("the list of choices is empty")
	}
	quoted := make([]string, len(choices))
	for i, c := range choices {
		quoted[i] = regexp.QuoteMeta(c)
	}
	return "(?:" + strings.Join(quoted, "|") + ")", nil
}
