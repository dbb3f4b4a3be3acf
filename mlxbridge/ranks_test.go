package mlxbridge

import (
	"bytes"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/internal/golden"
)

// rankModels are the models the two-rank test splits: float, MLX 4-bit
// (quantisation groups split between the ranks) and Qwen2's biases.
var rankModels = []string{"tiny-f32", "tiny-mlx-q4", "tiny-qwen2-f32"}

const followEnv = "DRIFTWOOD_TEST_FOLLOW"

// TestRanks runs each test model split across two ranks, this process
// and a second one over loopback (MLX's ring backend), against the same
// model in this process alone: the logits of the prompt and of 16
// greedy steps agree to the float tolerance (the sums over ranks add in
// another order), the greedy ids are the same, and the KV state exported
// from the split model (the heads gathered from both ranks) is the one
// process's.
func TestRanks(t *testing.T) {
	if os.Getenv(followEnv) != "" {
		t.Skip("this process is rank 1")
	}
	requireLibrary(t)
	hosts := filepath.Join(t.TempDir(), "hosts.json")
	os.WriteFile(hosts, []byte(fmt.Sprintf(`[["127.0.0.1:%d"],["127.0.0.1:%d"]]`, freePort(t), freePort(t))), 0o644)
	follower := exec.Command(os.Args[0], "-test.run=^TestRankFollower$")
	follower.Env = append(os.Environ(), followEnv+"=1", "MLX_RANK=1", "MLX_HOSTFILE="+hosts)
	out := &bytes.Buffer{}
	follower.Stdout, follower.Stderr = out, out
	if err := follower.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		err := follower.Wait()
		if err != nil || t.Failed() {
			t.Errorf("rank 1: %v\n%s", err, out)
		}
	}()
	t.Setenv("MLX_RANK", "0")
	t.Setenv("MLX_HOSTFILE", hosts)
	g, err := JoinGroup("")
	if err != nil {
		follower.Process.Kill()
		t.Fatal(err)
	}
	if g.Rank != 0 || g.Size != 2 {
		t.Fatalf("rank %d of %d, want 0 of 2", g.Rank, g.Size)
	}
	for _, name := range rankModels {
		m, err := engine.LoadModel(golden.ModelDir(name))
		if err != nil {
			t.Fatal(err)
		}
		prompt := mustGolden(t, name).Prompt.IDs
		one, err := New(m, Options{Device: "cpu", KVType: engine.KVF32})
		if err != nil {
			t.Fatal(err)
		}
		two, err := New(m, Options{Device: "cpu", KVType: engine.KVF32, Group: g})
		if err != nil {
			t.Fatal(err)
		}
		a, b := greedyRun(t, one, m, prompt), greedyRun(t, two, m, prompt)
		if !slices.Equal(a.ids, b.ids) {
			t.Errorf("%s: greedy ids on two ranks %v, on one %v", name, b.ids, a.ids)
		}
		if d := maxRelDiff(b.logits, a.logits); d > 1e-4 {
			t.Errorf("%s: logits on two ranks differ from one's by %.2g", name, d)
		}
		for l := range a.kv.K {
			if d := maxRelDiff(f32(b.kv.K[l]), f32(a.kv.K[l])) + maxRelDiff(f32(b.kv.V[l]), f32(a.kv.V[l])); d > 1e-4 || b.kv.KVHeads != a.kv.KVHeads {
				t.Errorf("%s layer %d: the exported KV of two ranks differs from one's by %.2g (%d heads, want %d)", name, l, d, b.kv.KVHeads, a.kv.KVHeads)
			}
		}
		// Each side's exported state, imported on the other, decodes
		// the next token as the exporter does.
		next := []int32{a.ids[len(a.ids)-1]}
		for _, c := range []struct {
			from         *engine.KVState
			to, exporter *Backend
		}{{a.kv, two, one}, {b.kv, one, two}} {
			got, want := importThenStep(t, c.to, m, c.from, next), importThenStep(t, c.exporter, m, c.from, next)
			if d := maxRelDiff(got, want); d > 1e-4 {
				t.Errorf("%s: a state imported on the other side decodes %.2g away", name, d)
			}
		}
		// A second split backend of the same model beside the first (a
		// chat reopening its model): rank 1 serves both.
		again, err := New(m, Options{Device: "cpu", KVType: engine.KVF32, Group: g})
		if err != nil {
			t.Fatal(err)
		}
		if c := greedyRun(t, again, m, prompt); !slices.Equal(c.ids, a.ids) {
			t.Errorf("%s: a second split backend: greedy ids %v, want %v", name, c.ids, a.ids)
		}
		t.Logf("%s: %d greedy ids the same on two ranks; logits within %.1g", name, len(a.ids), maxRelDiff(b.logits, a.logits))
		one.Close()
		two.Close()
		again.Close()
		if err := g.Exit(); err != nil { // rank 1's Follow returns
			t.Fatal(err)
		}
		m.Close()
	}
}

// TestRankFollower is rank 1 of TestRanks, in its own process.
func TestRankFollower(t *testing.T) {
	if os.Getenv(followEnv) == "" {
		t.Skip("run by TestRanks as rank 1")
	}
	g, err := JoinGroup("")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range rankModels {
		m, err := engine.LoadModel(golden.ModelDir(name))
		if err != nil {
			t.Fatal(err)
		}
		if err := Follow(m, Options{Device: "cpu", KVType: engine.KVF32, Group: g}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		m.Close()
	}
}

type greedyResult struct {
	ids    []int32
	logits []float32 // every step's, one after another
	kv     *engine.KVState
}

// greedyRun feeds prompt and 16 greedy tokens, keeping every step's
// logits and the exported cache.
func greedyRun(t *testing.T, b engine.Backend, m *engine.Model, prompt []int32) greedyResult {
	t.Helper()
	c, err := b.NewCache(64)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var r greedyResult
	logits := make([]float32, m.Config.VocabSize)
	feed := prompt
	for range 16 {
		if err := b.Forward(c, feed, logits); err != nil {
			t.Fatal(err)
		}
		r.logits = append(r.logits, logits...)
		feed = []int32{engine.Argmax(logits)}
		r.ids = append(r.ids, feed[0])
	}
	if r.kv, err = c.Export(); err != nil {
		t.Fatal(err)
	}
	return r
}

// importThenStep imports s into a new cache of b and feeds next.
func importThenStep(t *testing.T, b *Backend, m *engine.Model, s *engine.KVState, next []int32) []float32 {
	t.Helper()
	c, err := b.NewCache(64)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Import(s); err != nil {
		t.Fatal(err)
	}
	logits := make([]float32, m.Config.VocabSize)
	if err := b.Forward(c, next, logits); err != nil {
		t.Fatal(err)
	}
	return logits
}

// maxRelDiff is the largest |a−b| relative to |b| above 1.
func maxRelDiff(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	var d float64
	for i := range a {
		d = max(d, math.Abs(float64(a[i])-float64(b[i]))/max(1, math.Abs(float64(b[i]))))
	}
	return d
}

func f32(b []byte) []float32 { return float32s(b) }

func mustGolden(t *testing.T, name string) *golden.Golden {
	g, err := golden.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
