package json

import (
	stdjson "encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestMaskBench runs JSONSchemaBench's MaskBench corpus (11,306 schemas
// people wrote: GitHub, Kubernetes, Snowplow, the Washington Post's API,
// SchemaStore, function-calling definitions, with valid and invalid
// instances each; llguidance's anchor figures are measured on it) when
// DRIFTWOOD_MASKBENCH names its data folder (maskbench/data of
// github.com/guidance-ai/jsonschemabench; not committed: 11,305 files).
// For every schema the controller accepts, no instance the corpus marks
// invalid may be written, byte by byte as the masks see it; accepted
// schemas, refusals by reason and the valid instances that can be
// written are counted, by source (llguidance 0.7.10's figures on the
// same corpus, from its README: 8,929 schemas compiled, 8,909 passing
// every test, no invalid instance generated).
func TestMaskBench(t *testing.T) {
	dir := os.Getenv("DRIFTWOOD_MASKBENCH")
	if dir == "" {
		t.Skip("DRIFTWOOD_MASKBENCH is not set: point it at maskbench/data of github.com/guidance-ai/jsonschemabench to run the real-world corpus")
	}
	files, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no schemas in %s: %v", dir, err)
	}
	type tally struct{ schemas, accepted, passing, valid, written, invalid int }
	bySource := map[string]*tally{}
	reasons := map[string]int{}
	kw := regexp.MustCompile(`keywords? "[^"]+"( "[^"]+")?|\$ref|anyOf: [a-z]+ [a-z]+|oneOf: [a-z]+ [a-z]+|allOf: [a-z]+ [a-z]+ [a-z]+|no value is valid|more than \d+ [a-z]+|not`)
	var slow []string
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var c struct {
			Schema stdjson.RawMessage
			Tests  []struct {
				Valid bool
				Data  stdjson.RawMessage
			}
		}
		if err := stdjson.Unmarshal(data, &c); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		name := filepath.Base(file)
		source, _, _ := strings.Cut(name, "---")
		source, _, _ = strings.Cut(source, "_")
		tl := bySource[source]
		if tl == nil {
			tl = &tally{}
			bySource[source] = tl
		}
		tl.schemas++
		if os.Getenv("DRIFTWOOD_MASKBENCH_TRACE") != "" {
			fmt.Fprintln(os.Stderr, name)
		}
		g := newGrammar()
		start := time.Now()
		root, err := g.compileSchema(string(c.Schema))
		if d := time.Since(start); d > time.Second {
			slow = append(slow, fmt.Sprintf("%s %v", name, d.Round(time.Millisecond)))
		}
		if err != nil {
			reasons[kw.FindString(err.Error())]++
			continue
		}
		g.root = root
		tl.accepted++
		passing := true
		for _, tc := range c.Tests {
			v, err := decodeOne(tc.Data)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			ok := g.acceptsFrom(root, encode(v))
			switch {
			case tc.Valid:
				tl.valid++
				if ok {
					tl.written++
				} else {
					passing = false
				}
			case ok:
				t.Errorf("%s: the invalid instance %s can be written", name, tc.Data)
			default:
				tl.invalid++
			}
		}
		if passing {
			tl.passing++
		}
	}
	var all tally
	sources := make([]string, 0, len(bySource))
	for s := range bySource {
		sources = append(sources, s)
	}
	slices.Sort(sources)
	for _, s := range sources {
		tl := bySource[s]
		t.Logf("%-14s %5d of %5d schemas accepted (%4.1f%%), %5d with every valid instance writable; %5d invalid instances all impossible; %5d of %5d valid ones can be written",
			s, tl.accepted, tl.schemas, 100*float64(tl.accepted)/float64(tl.schemas), tl.passing, tl.invalid, tl.written, tl.valid)
		all.schemas += tl.schemas
		all.accepted += tl.accepted
		all.passing += tl.passing
		all.invalid += tl.invalid
		all.written += tl.written
		all.valid += tl.valid
	}
	t.Logf("%-14s %5d of %5d schemas accepted (%4.1f%%), %5d with every valid instance writable; %5d invalid instances all impossible; %5d of %5d valid ones can be written",
		"all", all.accepted, all.schemas, 100*float64(all.accepted)/float64(all.schemas), all.passing, all.invalid, all.written, all.valid)
	type reason struct {
		why string
		n   int
	}
	var rs []reason
	for why, n := range reasons {
		rs = append(rs, reason{why, n})
	}
	slices.SortFunc(rs, func(a, b reason) int { return b.n - a.n })
	for _, r := range rs[:min(len(rs), 60)] {
		t.Logf("refused %5d: %s", r.n, r.why)
	}
	for _, s := range slow {
		t.Logf("compiled in over a second: %s", s)
	}
}
