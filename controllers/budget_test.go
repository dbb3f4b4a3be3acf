package controllers

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine"
)

// TestRunawayTakeBacks runs controllers that keep taking tokens back, so
// that the reply never grows to its limit: each is switched off with a
// message naming the reason, and the reply goes on unconstrained to its
// limit. Before the cap they ran forever; the test stops them after
// 20,000 events.
func TestRunawayTakeBacks(t *testing.T) {
	force := strings.Repeat(`\28\00\00\00`, 32) // 32 forced 40s
	cases := []struct {
		name, reason string
		record       string // the result record at 1024, returned at every step
		maxTokens    int
		want         string
	}{
		{"back", "BACKTRACK 1 at every step: sample, take back, sample…", `\10\00\00\00\00\00\00\00\01\00\00\00`, 12,
			"took 88 steps in this reply without reaching its limit of 12 tokens (at most twice that plus 64 steps): it keeps taking tokens back"},
		{"backforce", "BACKTRACK 2 + FORCE 1 (and the token sampled after it): the reply never grows", `\18\00\00\00\00\00\00\00\02\00\00\00\00\10\00\00\01\00\00\00`, 12,
			"took 88 steps in this reply"},
		{"churn", "FORCE 32 then take them back with the sampled token, at every step", `\18\00\00\00\00\00\00\00\21\00\00\00\00\10\00\00\20\00\00\00`, 40,
			"would take back 1056 tokens in this reply, more than the 1024 allowed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			d := h.driver(nil)
			defer d.Close()
			d.Use(h.load(t, c.name, watModule("(i32.const 0)", "(i32.const 1024)", `
  (data (i32.const 1024) "`+c.record+`")
  (data (i32.const 4096) "`+force+`")`)), "")
			vocab := h.model.Config.VocabSize
			cache, _ := h.b.NewCache(256)
			gen := engine.NewGenerator(h.b, engine.NewSampler(engine.SamplerConfig{TopP: 1, RepeatPenalty: 1}, vocab), vocab)
			gen.Hook, gen.MaxTokens = d, c.maxTokens
			errRunaway := errors.New("still going after 20,000 events")
			events, reply := 0, []int32(nil)
			st, err := gen.Generate(context.Background(), &engine.Sequence{Cache: cache}, h.g.Prompt.IDs, func(e engine.Event) error {
				if events++; events > 20000 {
					return errRunaway
				}
				reply = reply[:len(reply)-e.Backtrack]
				if e.Token >= 0 {
					reply = append(reply, e.Token)
				}
				return nil
			})
			if err != nil || st.Reason != engine.StopMaxTokens || len(reply) != c.maxTokens {
				t.Fatalf("%s: reply of %d tokens (%s), %v; want %d tokens", c.reason, len(reply), st.Reason, err, c.maxTokens)
			}
			logs := h.logText()
			if strings.Count(logs, "\n") != 0 || !strings.Contains(logs, c.want) || !strings.Contains(logs, "controller off until the next reply") {
				t.Errorf("%s: logs %q, want one message saying %q", c.reason, logs, c.want)
			}
		})
	}
}
