package controllers

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/cpu"
	"github.com/driftwoodlabs/driftwood/engine/tokenizer"
	"github.com/driftwoodlabs/driftwood/internal/golden"
)

// watModule is a controller in WAT for host tests: a bump allocator, a
// result record at 1024, a mask at 2048, forced ids at 4096, a step
// counter, and the given step body (which returns the record's address or
// 0) plus extra definitions.
func watModule(init, step, extra string) string {
	return `(module
  (import "driftwood" "log" (func $log (param i32 i32)))
  (import "driftwood" "kv_append" (func $kv_append (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (global $heap (mut i32) (i32.const 8192))
  (global $steps (mut i32) (i32.const 0))
  (data (i32.const 512) "steps")
  (func (export "dw_abi_version") (result i32) (i32.const 2))
  (func (export "dw_alloc") (param $n i32) (result i32)
    (local $p i32)
    (local.set $p (global.get $heap))
    (global.set $heap (i32.and (i32.add (i32.add (local.get $p) (local.get $n)) (i32.const 7)) (i32.const -8)))
    (if (i32.gt_u (global.get $heap) (i32.mul (memory.size) (i32.const 65536)))
      (then (drop (memory.grow (i32.add (i32.shr_u (global.get $heap) (i32.const 16)) (i32.const 1))))))
    (local.get $p))
  (func (export "dw_load") (param i32 i32 i32) (result i32) (i32.const 0))
  (func (export "dw_init") (param i32 i32) (result i32) ` + init + `)
  (func (export "dw_begin") (param $p i32) (param $n i32) (result i32) (i32.const 0))
  (func (export "dw_step") (param $p i32) (param $n i32) (result i32)
    ;; record how many tokens each step was given, as one byte per step
    (i32.store8 (i32.const 600) (local.get $n))
    (drop (call $kv_append (i32.const 512) (i32.const 5) (i32.const 600) (i32.const 1)))
    (global.set $steps (i32.add (global.get $steps) (i32.const 1)))
    ` + step + `)
  ` + extra + `
)`
}

// allowOnly is a controller whose mask allows one token (< 32).
func allowOnly(tok int) string {
	return watModule("(i32.const 0)", "(i32.const 1024)", fmt.Sprintf(`
  (data (i32.const 1024) "\01\00\00\00\00\08\00\00")
  (data (i32.const 2048) "%s")`, le32(1<<tok)))
}

func le32(v uint32) string {
	return fmt.Sprintf(`\%02x\%02x\%02x\%02x`, v&255, v>>8&255, v>>16&255, v>>24)
}

type harness struct {
	rt    *wasmRuntime
	vocab *vocabulary
	model *engine.Model
	b     *cpu.Backend
	g     *golden.Golden
	logs  []Log
	mu    sync.Mutex
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	m, err := engine.LoadModel(golden.ModelDir("tiny-f32"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := cpu.New(m, cpu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(filepath.Join(golden.ModelDir("tiny-f32"), "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	g, err := golden.Load("tiny-f32")
	if err != nil {
		t.Fatal(err)
	}
	rt := newWasmRuntime(defaultLimits(), "")
	t.Cleanup(func() { rt.Close(); b.Close(); m.Close() })
	return &harness{rt: rt, vocab: newVocabulary(tok, m.Config.VocabSize), model: m, b: b, g: g}
}

func (h *harness) load(t *testing.T, name, wat string) *Module {
	t.Helper()
	m, err := h.rt.Load(name, []byte(wat))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return m
}

func (h *harness) driver(reg *registry) *driver {
	return newDriver(h.rt, h.vocab, newKVStore(), reg, func(l Log) {
		h.mu.Lock()
		h.logs = append(h.logs, l)
		h.mu.Unlock()
	})
}

func (h *harness) logText() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var s []string
	for _, l := range h.logs {
		s = append(s, l.Controller+": "+l.Text)
	}
	return strings.Join(s, "\n")
}

// replyWith generates up to n tokens of a fresh conversation with d as the
// hook, at temperature temp with the given seed, stopping at end of turn.
func (h *harness) replyWith(t *testing.T, d *driver, n int, temp float64, seed uint64) ([]int32, engine.Stats) {
	t.Helper()
	vocab := h.model.Config.VocabSize
	c, _ := h.b.NewCache(256)
	seq := &engine.Sequence{Cache: c}
	gen := engine.NewGenerator(h.b, engine.NewSampler(engine.SamplerConfig{Temperature: temp, TopP: 1, RepeatPenalty: 1, Seed: seed}, vocab), vocab)
	gen.Hook, gen.MaxTokens = d, n
	gen.StopTokens = h.model.Config.EOSTokenIDs
	var reply []int32
	st, err := gen.Generate(context.Background(), seq, h.g.Prompt.IDs, func(e engine.Event) error {
		reply = reply[:len(reply)-e.Backtrack]
		if e.Token >= 0 {
			reply = append(reply, e.Token)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return reply, st
}

// reply generates up to n tokens with d as the hook, continuing seq (a new
// sequence when nil), at temperature temp; onToken may act between tokens.
func (h *harness) reply(t *testing.T, d *driver, seq *engine.Sequence, n int, temp float64, onToken func(i int)) ([]int32, engine.Stats, *engine.Sequence) {
	t.Helper()
	vocab := h.model.Config.VocabSize
	if seq == nil {
		c, _ := h.b.NewCache(256)
		seq = &engine.Sequence{Cache: c}
	}
	gen := engine.NewGenerator(h.b, engine.NewSampler(engine.SamplerConfig{Temperature: temp, TopP: 1, RepeatPenalty: 1, Seed: 1}, vocab), vocab)
	gen.Hook, gen.MaxTokens = d, n
	var reply []int32
	st, err := gen.Generate(context.Background(), seq, h.g.Prompt.IDs, func(e engine.Event) error {
		reply = reply[:len(reply)-e.Backtrack]
		if e.Token >= 0 {
			reply = append(reply, e.Token)
			if onToken != nil {
				onToken(len(reply))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return reply, st, seq
}
