package conversation

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/driftwoodlabs/driftwood/controllers"
	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/chat"
	"github.com/driftwoodlabs/driftwood/engine/cpu"
	"github.com/driftwoodlabs/driftwood/engine/tokenizer"
	"github.com/driftwoodlabs/driftwood/internal/golden"
	"github.com/driftwoodlabs/driftwood/sessions"
)

// load is what chatopen.Loaded.Chat gives a conversation, assembled here
// (chatopen imports this package); name is a test model's, or a folder.
func load(t *testing.T, name string) Runtime {
	t.Helper()
	return loadKV(t, name, "")
}

// loadKV is load with the CPU backend's caches in type kv.
func loadKV(t *testing.T, name string, kv engine.KVType) Runtime {
	t.Helper()
	dir := name
	if !filepath.IsAbs(dir) {
		dir = golden.ModelDir(name)
	}
	m, err := engine.LoadModel(dir)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := chat.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := cpu.New(m, cpu.Options{KVType: kv})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close(); m.Close() })
	stop := slices.Clone(m.Config.EOSTokenIDs)
	if id, ok := tok.TokenID(tmpl.EOS()); ok {
		stop = append(stop, id)
	}
	return Runtime{Label: name, Weights: m, Tok: tok, Template: tmpl, Backend: b, Generator: func(s engine.SamplerConfig, maxTokens int) *engine.Generator {
		gen := engine.NewGenerator(b, engine.NewSampler(s, m.Config.VocabSize), m.Config.VocabSize)
		gen.StopTokens, gen.MaxTokens = stop, maxTokens
		return gen
	}}
}

var greedy = engine.SamplerConfig{TopP: 1, RepeatPenalty: 1}

// tokens sends text and returns the reply's token ids.
func tokens(t *testing.T, c *Conversation, text string) []int32 {
	t.Helper()
	var ids []int32
	if _, err := c.Send(context.Background(), text, func(u Update) error {
		ids = ids[:len(ids)-u.Event.Backtrack]
		if u.Event.Token >= 0 {
			ids = append(ids, u.Event.Token)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestSessionRoundTrip: after save and restore, the next 32 greedy tokens
// equal those of the conversation that was never saved, and the restore
// processed nothing again.
func TestSessionRoundTrip(t *testing.T) {
	for _, name := range []string{"tiny-f32", "tiny-bf16", "tiny-mlx-q4"} {
		t.Run(name, func(t *testing.T) {
			m := load(t, name)
			store := sessions.Store{Dir: t.TempDir()}
			a, err := New(m, Options{Window: 512, Sampler: greedy, MaxTokens: 12})
			if err != nil {
				t.Fatal(err)
			}
			a.SetSystem("You are a helpful assistant.")
			tokens(t, a, "What is the capital of France?")
			if err := saveAs(t, a, store, "s"); err != nil {
				t.Fatal(err)
			}
			b, _ := New(m, Options{Window: 512, Sampler: engine.DefaultSamplerConfig(), MaxTokens: 32})
			snap, err := store.Open("s")
			if err != nil {
				t.Fatal(err)
			}
			if err := b.Restore(snap); err != nil {
				t.Fatal(err)
			}
			snap.Close()
			if b.Tokens() != a.Tokens() || len(b.Messages()) != 3 || b.Sampler() != greedy {
				t.Fatalf("restored %d tokens, %d messages, sampler %+v", b.Tokens(), len(b.Messages()), b.Sampler())
			}
			a.SetMaxTokens(32)
			want, got := tokens(t, a, "And of Italy?"), tokens(t, b, "And of Italy?")
			if len(want) == 0 || !slices.Equal(got, want) {
				t.Errorf("after restore: %v\nnever saved:   %v", got, want)
			}
		})
	}
}

// TestSessionWithController saves a conversation whose controller keeps
// state in its key-value store and restores both.
func TestSessionWithController(t *testing.T) {
	m := load(t, "tiny-f32")
	// Allow only tokens 0-31; count steps in the store.
	dir := t.TempDir()
	err := os.WriteFile(filepath.Join(dir, "low.wat"), []byte(`(module
  (import "driftwood" "kv_append" (func $kv_append (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (global $heap (mut i32) (i32.const 8192))
  (data (i32.const 512) "steps")
  (data (i32.const 1024) "\01\00\00\00\00\08\00\00")
  (data (i32.const 2048) "\ff\ff\ff\ff")
  (func (export "dw_abi_version") (result i32) (i32.const 2))
  (func (export "dw_load") (param i32 i32 i32) (result i32) (i32.const 0))
  (func (export "dw_alloc") (param $n i32) (result i32)
    (local $p i32)
    (local.set $p (global.get $heap))
    (global.set $heap (i32.and (i32.add (i32.add (local.get $p) (local.get $n)) (i32.const 7)) (i32.const -8)))
    (if (i32.gt_u (global.get $heap) (i32.mul (memory.size) (i32.const 65536)))
      (then (drop (memory.grow (i32.add (i32.shr_u (global.get $heap) (i32.const 16)) (i32.const 1))))))
    (local.get $p))
  (func (export "dw_init") (param i32 i32) (result i32) (i32.const 0))
  (func (export "dw_begin") (param i32 i32) (result i32) (i32.const 0))
  (func (export "dw_step") (param i32 i32) (result i32)
    (drop (call $kv_append (i32.const 512) (i32.const 5) (i32.const 512) (i32.const 1)))
    (i32.const 1024)))`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	var mod *controllers.Module
	newConv := func(maxTokens int) *Conversation {
		h, err := controllers.NewHost(m.Tok, m.Weights.Config.VocabSize, controllers.HostOptions{Dirs: []string{dir}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(h.Close)
		if mod, err = h.Switch("low", ""); err != nil {
			t.Fatal(err)
		}
		c, err := New(m, Options{Window: 512, Sampler: greedy, MaxTokens: maxTokens, Controller: h})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	store := sessions.Store{Dir: t.TempDir()}
	a := newConv(8)
	first := tokens(t, a, "Hello")
	if slices.ContainsFunc(first, func(id int32) bool { return id >= 32 }) {
		t.Fatalf("controller not applied: %v", first)
	}
	if err := saveAs(t, a, store, "c"); err != nil {
		t.Fatal(err)
	}
	b := newConv(16)
	snap, err := store.Open("c")
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	if c := snap.Meta.Controller; c == nil || c.Name != "low" || c.SHA256 != mod.SHA256 || len(c.KV["steps"]) != 8 {
		t.Fatalf("saved controller state %+v", snap.Meta.Controller)
	}
	governed := [][]sessions.ReplyControl{{{Name: "low"}}}
	if got := snap.Meta.ReplyControls; !reflect.DeepEqual(got, governed) {
		t.Errorf("the session says the reply was governed by %+v, want %+v", got, governed)
	}
	if err := b.Restore(snap); err != nil {
		t.Fatal(err)
	}
	if got := b.ReplyControls(); !reflect.DeepEqual(got, governed) {
		t.Errorf("restored: the reply was governed by %+v, want %+v", got, governed)
	}
	if v := b.Controller().Store()["steps"]; len(v) != 8 {
		t.Errorf("restored controller store holds %d steps, want 8", len(v))
	}
	a.SetMaxTokens(16)
	if want, got := tokens(t, a, "More"), tokens(t, b, "More"); !slices.Equal(got, want) {
		t.Errorf("after restore %v, never saved %v", got, want)
	}
}

func TestRestoreRefusesAnotherModel(t *testing.T) {
	f32, q4 := load(t, "tiny-f32"), load(t, "tiny-mlx-q4")
	store := sessions.Store{Dir: t.TempDir()}
	a, _ := New(f32, Options{Window: 512, Sampler: greedy, MaxTokens: 4})
	tokens(t, a, "Hi")
	saveAs(t, a, store, "s")
	b, _ := New(q4, Options{Window: 512, Sampler: greedy, MaxTokens: 4})
	tokens(t, b, "Something else")
	before := slices.Clone(b.Messages())
	snap, err := store.Open("s")
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	if err := b.Restore(snap); err == nil {
		t.Fatal("a q4 conversation took an f32 snapshot")
	}
	if len(b.Messages()) != len(before) || b.Messages()[1].Content != before[1].Content {
		t.Error("a refused restore changed the conversation")
	}
	// The transcript can still be taken, and the next reply re-processes it.
	if err := b.RestoreTranscript(snap.Meta); err != nil {
		t.Fatal(err)
	}
	if b.Tokens() != 0 || len(b.Messages()) != 2 {
		t.Errorf("transcript restore: %d tokens, %d messages", b.Tokens(), len(b.Messages()))
	}
	if reply := tokens(t, b, "Again"); len(reply) == 0 {
		t.Error("no reply after a transcript restore")
	}
}

func TestRegenerateReusesTheCache(t *testing.T) {
	m := load(t, "tiny-f32")
	c, _ := New(m, Options{Window: 512, Sampler: greedy, MaxTokens: 6})
	first := tokens(t, c, "Hello")
	var again []int32
	rep, err := c.Regenerate(context.Background(), func(u Update) error {
		if u.Event.Token >= 0 {
			again = append(again, u.Event.Token)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(first, again) {
		t.Errorf("greedy regenerate %v, first %v", again, first)
	}
	if rep.Stats.PromptTokens != 1 {
		t.Errorf("regenerate processed %d prompt tokens, want 1 (the rest is cached)", rep.Stats.PromptTokens)
	}
	if len(c.Messages()) != 2 {
		t.Errorf("%d messages after regenerate", len(c.Messages()))
	}
}

// TestFreshSeeds: with the default seed 0, a regenerated reply is a new
// sample, each reply's seed is kept (and saved with the session), and the
// seed reproduces its reply.
func TestFreshSeeds(t *testing.T) {
	m := load(t, "tiny-f32")
	hot := engine.SamplerConfig{Temperature: 1, TopP: 1, RepeatPenalty: 1}
	c, _ := New(m, Options{Window: 512, Sampler: hot, MaxTokens: 16})
	first := tokens(t, c, "Hello")
	var again []int32
	if _, err := c.Regenerate(context.Background(), func(u Update) error {
		if u.Event.Token >= 0 {
			again = append(again, u.Event.Token)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	seeds := c.ReplySeeds()
	if len(seeds) != 1 || seeds[0] == 0 {
		t.Fatalf("reply seeds %v after a regenerate, want the one reply's", seeds)
	}
	if slices.Equal(first, again) {
		t.Errorf("regenerate at temperature 1 gave the same %d tokens", len(first))
	}
	// The kept seed reproduces the regenerated reply.
	hot.Seed = seeds[0]
	d, _ := New(m, Options{Window: 512, Sampler: hot, MaxTokens: 16})
	if got := tokens(t, d, "Hello"); !slices.Equal(got, again) {
		t.Errorf("seed %d gave %v, the reply was %v", seeds[0], got, again)
	}
	tokens(t, c, "More")
	snap := saved(t, c)
	e, _ := New(m, Options{Window: 512, Sampler: hot, MaxTokens: 16})
	if err := e.Restore(snap); err != nil {
		t.Fatal(err)
	}
	if got, want := e.ReplySeeds(), c.ReplySeeds(); !slices.Equal(got, want) || len(got) != 2 {
		t.Errorf("restored reply seeds %v, saved %v", got, want)
	}
}

// saveAs saves c as session name, claiming it for the save.
// saved saves c as a session in a folder of the test's and opens it.
func saved(t *testing.T, c *Conversation) *sessions.Snapshot {
	t.Helper()
	store := sessions.Store{Dir: t.TempDir()}
	if err := saveAs(t, c, store, "s"); err != nil {
		t.Fatal(err)
	}
	snap, err := store.Open("s")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { snap.Close() })
	return snap
}

func saveAs(t *testing.T, c *Conversation, store sessions.Store, name string) error {
	t.Helper()
	claim, err := store.Claim(name)
	if err != nil {
		return err
	}
	defer claim.Release()
	return c.Save(claim)
}

// TestTooLongMessageChangesNothing: a message longer than the window is
// refused and leaves the conversation exactly as it was, so the next
// message, and a save and restore, go on as if it was never sent (a
// refused message used to stay and wedge every later turn).
func TestTooLongMessageChangesNothing(t *testing.T) {
	m := load(t, "tiny-f32")
	c, _ := New(m, Options{Window: 512, Sampler: greedy, MaxTokens: 4})
	ref, _ := New(m, Options{Window: 512, Sampler: greedy, MaxTokens: 4})
	tokens(t, c, "Hello")
	tokens(t, ref, "Hello")
	msgs, held := slices.Clone(c.Messages()), c.Tokens()
	huge := strings.Repeat("paste ", 3000)
	_, err := c.Send(context.Background(), huge, func(Update) error {
		t.Error("a refused message produced a reply")
		return nil
	})
	var long *TooLongError
	if !errors.As(err, &long) || long.Window != 512 || long.Held != held || long.Tokens <= 512 {
		t.Fatalf("Send(huge) = %v, want a TooLongError", err)
	}
	if !reflect.DeepEqual(c.Messages(), msgs) || c.Tokens() != held {
		t.Fatalf("after the refusal: %d messages, %d tokens; before: %d, %d", len(c.Messages()), c.Tokens(), len(msgs), held)
	}
	if got, want := tokens(t, c, "More"), tokens(t, ref, "More"); !slices.Equal(got, want) {
		t.Errorf("the next reply %v, without the refused message %v", got, want)
	}
	if _, err := c.Regenerate(context.Background(), func(Update) error { return nil }); err != nil {
		t.Errorf("regenerate after a refusal: %v", err)
	}
}

// TestEveryKVType runs a conversation in each KV cache type past its
// window (the context shift), regenerates a reply greedily (the same one,
// from the cache), saves it and restores it into a conversation whose
// cache is of every other type: the restored one goes on as the unsaved
// one does, and a prefix-cached new chat starts from the same state.
func TestEveryKVType(t *testing.T) {
	for _, typ := range engine.KVTypes {
		t.Run(string(typ), func(t *testing.T) {
			m := loadKV(t, "tiny-qwen3-f32", typ)
			store := sessions.Store{Dir: t.TempDir()}
			a, err := New(m, Options{Window: 512, Sampler: greedy, MaxTokens: 16})
			if err != nil {
				t.Fatal(err)
			}
			a.SetSystem(system)
			shifted := false
			for i := range 14 {
				r := send(t, a, fmt.Sprintf("Turn %d: one more thing about rivers, please.", i))
				shifted = shifted || (r.Compaction != nil && r.Compaction.Shifted)
			}
			if !shifted {
				t.Fatal("no context shift in 14 turns of a 512-token window")
			}
			last := a.Messages()[len(a.Messages())-1].Content
			if _, err := a.Regenerate(context.Background(), func(Update) error { return nil }); err != nil {
				t.Fatal(err)
			}
			if again := a.Messages()[len(a.Messages())-1].Content; again != last {
				t.Errorf("greedy regenerate %q, first %q", again, last)
			}
			if err := saveAs(t, a, store, "s"); err != nil {
				t.Fatal(err)
			}
			want := tokens(t, a, "And the sea?")
			for _, other := range engine.KVTypes {
				b, _ := New(loadKV(t, "tiny-qwen3-f32", other), Options{Window: 512, Sampler: greedy, MaxTokens: 16})
				snap, err := store.Open("s")
				if err != nil {
					t.Fatal(err)
				}
				err = b.Restore(snap)
				snap.Close()
				if err != nil {
					t.Fatalf("restored into %s: %v", other, err)
				}
				got := tokens(t, b, "And the sea?")
				// Another type rounds the state once more: the replies
				// agree while the logits' order does; the same type's
				// must agree exactly.
				if other == typ && !slices.Equal(got, want) {
					t.Errorf("restored into %s: %v, never saved %v", other, got, want)
				}
				if len(got) == 0 {
					t.Errorf("restored into %s: an empty reply", other)
				}
			}
			prefixes := &sessions.Prefixes{Dir: t.TempDir(), Limit: 1 << 30}
			chat := func() Reply {
				c, _ := New(m, Options{Window: 512, Sampler: greedy, MaxTokens: 12, Prefixes: prefixes})
				defer c.Close()
				c.SetSystem(system)
				return send(t, c, "What is the capital of France?")
			}
			cold, warm := chat(), chat()
			if warm.Prefix < sessions.MinPrefix || warm.PrefixErr != nil || warm.Text != cold.Text {
				t.Errorf("from the prefix cache: %d restored (%v), %q; without: %q", warm.Prefix, warm.PrefixErr, warm.Text, cold.Text)
			}
		})
	}
}

// lostBackend is a backend whose caches cannot export their state (a
// model split across ranks that lost one).
type lostBackend struct{ engine.Backend }

type lostCache struct{ engine.Cache }

func (b lostBackend) NewCache(window int) (engine.Cache, error) {
	c, err := b.Backend.NewCache(window)
	return lostCache{c}, err
}

func (b lostBackend) Forward(c engine.Cache, tokens []int32, logits []float32) error {
	return b.Backend.Forward(c.(lostCache).Cache, tokens, logits)
}

func (lostCache) Export() (*engine.KVState, error) { return nil, errors.New("a rank was lost") }

// TestSaveRebuildsLostState: when the backend cannot export its state,
// the save computes it again through Runtime.Rebuild, and the session
// goes on as the conversation that never lost anything.
func TestSaveRebuildsLostState(t *testing.T) {
	m := load(t, "tiny-f32")
	lost := m
	lost.Backend = lostBackend{m.Backend}
	gen := m.Generator
	lost.Generator = func(s engine.SamplerConfig, maxTokens int) *engine.Generator {
		g := gen(s, maxTokens)
		g.Backend = lost.Backend
		return g
	}
	a, _ := New(lost, Options{Window: 512, Sampler: greedy, MaxTokens: 12})
	tokens(t, a, "What is the capital of France?")
	store := sessions.Store{Dir: t.TempDir()}
	if err := saveAs(t, a, store, "s"); err == nil || !strings.Contains(err.Error(), "a rank was lost") {
		t.Fatalf("a save without Rebuild: %v, want the export's error", err)
	}
	rebuilt := 0
	a.rt.Rebuild = func(ids []int32, window int) (*engine.KVState, error) {
		rebuilt++
		c, err := m.Backend.NewCache(window)
		if err != nil {
			return nil, err
		}
		defer c.Close()
		if err := m.Backend.Forward(c, ids, make([]float32, m.Weights.Config.VocabSize)); err != nil {
			return nil, err
		}
		return c.Export()
	}
	if err := saveAs(t, a, store, "s"); err != nil || rebuilt != 1 {
		t.Fatalf("a save with Rebuild: %v (rebuilt %d times)", err, rebuilt)
	}
	b, _ := New(m, Options{Window: 512, Sampler: greedy, MaxTokens: 16})
	snap, err := store.Open("s")
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	if err := b.Restore(snap); err != nil {
		t.Fatal(err)
	}
	never, _ := New(m, Options{Window: 512, Sampler: greedy, MaxTokens: 12})
	tokens(t, never, "What is the capital of France?")
	never.SetMaxTokens(16)
	if want, got := tokens(t, never, "And of Italy?"), tokens(t, b, "And of Italy?"); len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("after the rebuilt save: %v\nnever lost:          %v", got, want)
	}
}
