package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/driftwoodlabs/driftwood/internal/golden"
)

// buildDriftwood builds the binary into a temporary folder.
func buildDriftwood(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "driftwood")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// TestRunPrintsTheFinalReply runs the built binary, its stdout a pipe,
// with every shipped controller and a probe that takes tokens back
// (testdata/takeback.wat) over several seeds: what run prints is the
// final reply byte for byte (the stats' text of the same run with
// --json, which is also what the --json lines give once their take-backs
// are applied), and it satisfies the controller's constraint. Then, in a
// real terminal (tmux), where run streams and erases what is taken back,
// the screen shows the final reply: on a tall screen, and on one so
// short that the rows to erase scroll out of reach.
func TestRunPrintsTheFinalReply(t *testing.T) {
	bin := buildDriftwood(t)
	home := t.TempDir()
	env := []string{"HOME=" + home, "XDG_DATA_HOME=" + filepath.Join(home, "data"), "XDG_CACHE_HOME=" + filepath.Join(home, "cache")}
	takeback, err := filepath.Abs(filepath.Join("testdata", "takeback.wat"))
	if err != nil {
		t.Fatal(err)
	}
	base := []string{"run", "--config", filepath.Join(home, "none.toml"), "--model", golden.ModelDir("tiny-f32"), "--prompt", "Hello", "--temp", "1", "--max-tokens", "32"}
	run := func(args ...string) (string, string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), env...)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, errOut.String())
		}
		return out.String(), errOut.String()
	}
	words := func(max int) func(string) error {
		return func(s string) error {
			if n := len(strings.Fields(s)); n > max {
				return fmt.Errorf("%d words, more than %d", n, max)
			}
			return nil
		}
	}
	cases := []struct {
		controller, arg string
		valid           func(text string) error
		// everyPrefix: the constraint holds for a reply cut at
		// --max-tokens too (it is closed under prefixes)
		everyPrefix bool
	}{
		{"regex", `[a-z]{1,6}( [a-z]{1,6}){2}\.`, matches(`[a-z]{1,6}( [a-z]{1,6}){2}\.`), false},
		{"json", `{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`, func(s string) error {
			var v struct{ OK *bool }
			if err := json.Unmarshal([]byte(s), &v); err != nil || v.OK == nil {
				return fmt.Errorf("not an object with ok: %v", err)
			}
			return nil
		}, false},
		{"choice", `["red","green","light blue"]`, matches(`red|green|light blue`), false},
		{"ban", `["the","and"]`, func(s string) error {
			if l := strings.ToLower(s); strings.Contains(l, "the") || strings.Contains(l, "and") {
				return errors.New("contains a banned word")
			}
			return nil
		}, true},
		{"maxwords", "3", words(3), true},
		{takeback, "", matches(`[a-z ]*`), true},
	}
	takenBack := map[string]int{}
	for _, c := range cases {
		name := strings.TrimSuffix(filepath.Base(c.controller), ".wat")
		for seed := 1; seed <= 3; seed++ {
			args := append(slices.Clone(base), "--controller", c.controller, "--controller-arg", c.arg, "--seed", fmt.Sprint(seed))
			jsonOut, _ := run(append(args, "--json")...)
			text, back, stats := fromJSON(t, jsonOut)
			takenBack[name] += back
			if text != stats.Text {
				t.Errorf("%s, seed %d: the --json lines, take-backs applied, give %q; the stats' text is %q", name, seed, text, stats.Text)
			}
			if out, _ := run(args...); out != stats.Text+"\n" {
				t.Errorf("%s, seed %d: run printed %q; the final reply is %q", name, seed, out, stats.Text)
			}
			if err := c.valid(stats.Text); err != nil && (stats.Stop != "max_tokens" || c.everyPrefix) {
				t.Errorf("%s, seed %d: the reply %q breaks the constraint: %v", name, seed, stats.Text, err)
			}
		}
	}
	for _, name := range []string{"maxwords", "takeback"} {
		if takenBack[name] == 0 {
			t.Errorf("%s took no token back over three seeds: the test shows nothing", name)
		}
	}

	t.Run("terminal", func(t *testing.T) {
		if _, err := exec.LookPath("tmux"); err != nil {
			t.Skip("tmux is not installed (.ci/run installs it): the terminal check did not run")
		}
		args := append(slices.Clone(base), "--controller", takeback, "--seed", "3", "--max-tokens", "48")
		jsonOut, _ := run(append(args, "--json")...)
		final, back, _ := fromJSON(t, jsonOut)
		if back == 0 {
			t.Fatal("no take-back in the reply: the check shows nothing")
		}
		// The reply is ASCII, so its rows are runs of 20 characters;
		// the newline after it leaves an empty row.
		var rows []string
		for i := 0; i < len(final); i += 20 {
			rows = append(rows, strings.TrimRight(final[i:min(i+20, len(final))], " "))
		}
		rows = append(rows, "")
		// Tall: the whole reply stays on screen. Two rows: the rows to
		// erase scroll out of reach, and the screen shows the last rows.
		for _, height := range []int{30, 2} {
			want := rows[max(0, len(rows)-height):]
			for len(want) < height {
				want = append(want, "")
			}
			if screen := inTmux(t, bin, env, args, 20, height, home); !slices.Equal(screen, want) {
				t.Errorf("a 20×%d terminal shows\n%s\nwant the final reply's rows\n%s", height, strings.Join(screen, "\n"), strings.Join(want, "\n"))
			}
		}
	})
}

// matches returns a check that s matches expr as a whole.
func matches(expr string) func(string) error {
	re := regexp.MustCompile(`^(?:` + expr + `)$`)
	return func(s string) error {
		if !re.MatchString(s) {
			return fmt.Errorf("does not match %s", expr)
		}
		return nil
	}
}

// fromJSON reads `run --json` output: the reply's text rebuilt from the
// token lines (a take-back drops the last lines' texts), how many tokens
// were taken back, and the stats.
func fromJSON(t *testing.T, out string) (text string, back int, stats struct{ Stop, Text string }) {
	t.Helper()
	var texts []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(line, `{"stats"`) {
			var st statsLine
			if err := json.Unmarshal([]byte(line), &st); err != nil {
				t.Fatal(err)
			}
			stats.Stop, stats.Text = st.Stats.Stop, st.Stats.Text
			continue
		}
		var tl tokenLine
		if err := json.Unmarshal([]byte(line), &tl); err != nil {
			t.Fatalf("bad line %q: %v", line, err)
		}
		texts = texts[:len(texts)-tl.Backtrack]
		back += tl.Backtrack
		if tl.ID >= 0 || tl.Text != "" { // id -1: a take-back alone, or the text of a character the end cut short
			texts = append(texts, tl.Text)
		}
	}
	return strings.Join(texts, ""), back, stats
}

// inTmux runs the binary with args in a detached tmux session of width
// × height cells (stderr to a file) and returns the rows of its screen
// once it has ended, without trailing blanks.
func inTmux(t *testing.T, bin string, env, args []string, width, height int, dir string) []string {
	t.Helper()
	sock := filepath.Join(dir, fmt.Sprintf("tmux-%d", height))
	tmux := func(a ...string) string {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, "tmux", append([]string{"-S", sock}, a...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v\n%s", a, err, out)
		}
		return string(out)
	}
	quoted := make([]string, 0, len(env)+len(args)+2)
	for _, s := range append(append(append([]string{"env"}, env...), bin), args...) {
		quoted = append(quoted, "'"+strings.ReplaceAll(s, "'", `'\''`)+"'")
	}
	command := strings.Join(quoted, " ") + " 2>" + filepath.Join(dir, "stderr") + "; tmux -S " + sock + " wait-for -S ran; sleep 60"
	tmux("new-session", "-d", "-s", "dw", "-x", fmt.Sprint(width), "-y", fmt.Sprint(height), command)
	defer tmux("kill-server")
	tmux("wait-for", "ran")
	rows := strings.Split(strings.TrimSuffix(tmux("capture-pane", "-p", "-t", "dw"), "\n"), "\n")
	for len(rows) < height {
		rows = append(rows, "")
	}
	for i := range rows {
		rows[i] = strings.TrimRight(rows[i], " ")
	}
	return rows
}
