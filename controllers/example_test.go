package controllers

// One runnable example per capability of the controller ABI (ABI.md links
// each section here). Every controller is hand-written WAT on top of the
// same small prelude, driven by the real host (its runtime and driver) inside the
// real decode loop (engine.Generator) on the tiny test model. Sampling is
// seeded, so each // Output: is checked exactly by go test.

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/cpu"
	"github.com/driftwoodlabs/driftwood/engine/tokenizer"
	"github.com/driftwoodlabs/driftwood/internal/golden"
)

// controller is a complete module: the prelude below, a dw_load that
// accepts every vocabulary, and body, which defines dw_step (and any data
// it needs).
func controller(body string) string {
	return module(`
  (func (export "dw_load") (param i32 i32 i32) (result i32) (i32.const 0))` + body)
}

// module is the prelude plus body, which defines dw_load and dw_step. The
// prelude imports log, kv_append, tokenize and trie, and exports memory,
// a bump allocator (8-byte aligned, from 8192, in a $heap global),
// dw_abi_version (3), and dw_init and dw_begin that accept everything; a
// $step global serves a body that counts its steps. By convention the
// bodies put the result record at 1024, a mask at 2048 and forced ids at
// 4096.
func module(body string) string {
	return `(module
  (import "driftwood" "log" (func $log (param i32 i32)))
  (import "driftwood" "kv_append" (func $kv_append (param i32 i32 i32 i32) (result i32)))
  (import "driftwood" "tokenize" (func $tokenize (param i32 i32 i32 i32) (result i32)))
  (import "driftwood" "trie" (func $trie (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (global $heap (mut i32) (i32.const 8192))
  (global $step (mut i32) (i32.const 0))
  (func (export "dw_abi_version") (result i32) (i32.const 3))
  (func (export "dw_alloc") (param $n i32) (result i32)
    (local $p i32)
    (local.set $p (global.get $heap))
    (global.set $heap (i32.and (i32.add (i32.add (local.get $p) (local.get $n)) (i32.const 7)) (i32.const -8)))
    (local.get $p))
  (func (export "dw_init") (param i32 i32) (result i32) (i32.const 0))
  (func (export "dw_begin") (param i32 i32) (result i32) (i32.const 0))
` + body + `)`
}

// example runs one reply of at most maxTokens tokens on the tiny model
// with wat as the controller, sampling at temperature temp (seed 1), and
// prints what happened: each token added (+id, * when forced), each
// take-back (-n), the controller's log lines and why the reply stopped.
// It returns the conversation's key-value store and the reply's tokens.
func example(wat string, maxTokens int, temp float64) (*kvStore, []int32) {
	dir := golden.ModelDir("tiny-f32")
	m, err := engine.LoadModel(dir)
	check(err)
	defer m.Close()
	b, err := cpu.New(m, cpu.Options{})
	check(err)
	defer b.Close()
	tok, err := tokenizer.Load(filepath.Join(dir, "tokenizer.json"))
	check(err)
	g, err := golden.Load("tiny-f32")
	check(err)

	rt := newWasmRuntime(defaultLimits(), "")
	defer rt.Close()
	mod, err := rt.Load("demo", []byte(wat))
	check(err)
	kv := newKVStore()
	d := newDriver(rt, newVocabulary(tok, m.Config.VocabSize), kv, nil, func(l Log) {
		fmt.Printf("[controller %s] %s\n", l.Controller, l.Text)
	})
	defer d.Close()
	d.Use(mod, "")

	n := m.Config.VocabSize
	c, err := b.NewCache(256)
	check(err)
	defer c.Close()
	gen := engine.NewGenerator(b, engine.NewSampler(engine.SamplerConfig{Temperature: temp, TopP: 1, RepeatPenalty: 1, Seed: 1}, n), n)
	gen.Hook, gen.MaxTokens, gen.StopTokens = d, maxTokens, m.Config.EOSTokenIDs
	var events []string
	var reply []int32
	st, err := gen.Generate(context.Background(), &engine.Sequence{Cache: c}, g.Prompt.IDs, func(e engine.Event) error {
		if e.Backtrack > 0 {
			events = append(events, fmt.Sprintf("-%d", e.Backtrack))
			reply = reply[:len(reply)-e.Backtrack]
		}
		if e.Token >= 0 {
			reply = append(reply, e.Token)
			mark := ""
			if e.Forced {
				mark = "*"
			}
			events = append(events, fmt.Sprintf("+%d%s", e.Token, mark))
		}
		return nil
	})
	check(err)
	fmt.Printf("reply: %s (stop: %s)\n", strings.Join(events, " "), st.Reason)
	return kv, reply
}

// spell returns the text of ids in the tiny model's vocabulary.
func spell(ids []int32) string {
	tok, err := tokenizer.Load(filepath.Join(golden.ModelDir("tiny-f32"), "tokenizer.json"))
	check(err)
	var b []byte
	for _, id := range ids {
		b = append(b, tok.TokenBytes(id)...)
	}
	return string(b)
}

func check(err error) {
	if err != nil {
		panic(err)
	}
}

// A mask allows only some tokens: here ids 7 and 9 (bits 7 and 9 of the
// mask's first word, 0x280), at every step, at a high temperature.
func Example_mask() {
	example(controller(`
  (data (i32.const 1024) "\01\00\00\00\00\08\00\00") ;; flags MASK, mask_ptr 2048
  (data (i32.const 2048) "\80\02\00\00")             ;; ids 7 and 9
  (func (export "dw_step") (param i32 i32) (result i32) (i32.const 1024))`), 6, 1.5)
	// Output:
	// reply: +7 +7 +9 +9 +9 +9 (stop: max_tokens)
}

// FORCE appends tokens without sampling; without MASK the token sampled
// right after them (in the same step) may be anything. Here the first
// step forces 40 41 and later steps leave the reply alone.
func Example_force() {
	example(controller(`
  (data (i32.const 1024) "\08\00\00\00\00\00\00\00\00\00\00\00\00\10\00\00\02\00\00\00") ;; FORCE, force_ptr 4096, force_len 2
  (data (i32.const 4096) "\28\00\00\00\29\00\00\00") ;; 40 41
  (func (export "dw_step") (param i32 i32) (result i32)
    (global.set $step (i32.add (global.get $step) (i32.const 1)))
    (if (result i32) (i32.eq (global.get $step) (i32.const 1))
      (then (i32.const 1024)) (else (i32.const 0))))`), 4, 0)
	// Output:
	// reply: +40* +41* +265 +252 (stop: max_tokens)
}

// FORCE|MASK: the mask applies to the token sampled right after the
// forced ones, in the same step; dw_step is not called in between. Here
// 40 41 are forced and the next token must be 7, then STOP ends the reply
// at the following step.
func Example_forceMask() {
	example(controller(`
  (data (i32.const 1024) "\09\00\00\00\00\08\00\00\00\00\00\00\00\10\00\00\02\00\00\00") ;; FORCE|MASK
  (data (i32.const 1056) "\02\00\00\00")             ;; a second record: STOP
  (data (i32.const 2048) "\80\00\00\00")             ;; id 7
  (data (i32.const 4096) "\28\00\00\00\29\00\00\00") ;; 40 41
  (func (export "dw_step") (param $p i32) (param $n i32) (result i32)
    (global.set $step (i32.add (global.get $step) (i32.const 1)))
    (if (result i32) (i32.eq (global.get $step) (i32.const 1))
      (then (i32.const 1024)) (else (i32.const 1056))))`), 8, 1)
	// Output:
	// reply: +40* +41* +7 (stop: controller)
}

// BACKTRACK takes back reply tokens before anything else in the record
// happens. At its third step (two tokens sampled) this controller takes
// both back, forces 40 in their place, and stops.
func Example_backtrack() {
	example(controller(`
  (data (i32.const 1024) "\1a\00\00\00\00\00\00\00\02\00\00\00\00\10\00\00\01\00\00\00") ;; BACKTRACK|FORCE|STOP, backtrack 2, one forced id
  (data (i32.const 4096) "\28\00\00\00") ;; 40
  (func (export "dw_step") (param i32 i32) (result i32)
    (global.set $step (i32.add (global.get $step) (i32.const 1)))
    (if (result i32) (i32.eq (global.get $step) (i32.const 3))
      (then (i32.const 1024)) (else (i32.const 0))))`), 8, 0)
	// Output:
	// reply: +179 +481 -2 +40* (stop: controller)
}

// STOP ends the reply. dw_step is given the tokens appended since the
// previous step ($n: 0 at the first step, then 1 for each sampled token);
// this one stops once it has been given three.
func Example_stop() {
	example(controller(`
  (global $seen (mut i32) (i32.const 0))
  (data (i32.const 1024) "\02\00\00\00") ;; STOP
  (func (export "dw_step") (param $p i32) (param $n i32) (result i32)
    (global.set $seen (i32.add (global.get $seen) (local.get $n)))
    (if (result i32) (i32.ge_u (global.get $seen) (i32.const 3))
      (then (i32.const 1024)) (else (i32.const 0))))`), 8, 0)
	// Output:
	// reply: +179 +481 +481 (stop: controller)
}

// FAIL ends the reply as the controller's failure, where no token can
// continue it under the constraint: here at the third step, after two
// tokens. The user is told; the instance goes on to the next reply.
func Example_fail() {
	example(controller(`
  (data (i32.const 1024) "\20\00\00\00") ;; FAIL
  (func (export "dw_step") (param i32 i32) (result i32)
    (global.set $step (i32.add (global.get $step) (i32.const 1)))
    (if (result i32) (i32.eq (global.get $step) (i32.const 3))
      (then (i32.const 1024)) (else (i32.const 0))))`), 8, 0)
	// Output:
	// [controller demo] the reply cannot go on under its constraint, so it ends unfinished
	// reply: +179 +481 (stop: controller)
}

// TEMPERATURE sets this step's sampling temperature, whatever the user
// chose: at 0 the sampling is greedy, so a reply asked for at temperature
// 2 is the greedy one.
func Example_temperature() {
	greedy := controller(`
  (data (i32.const 1024) "\04\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00\00") ;; TEMPERATURE 0.0
  (func (export "dw_step") (param i32 i32) (result i32) (i32.const 1024))`)
	none := controller(`(func (export "dw_step") (param i32 i32) (result i32) (i32.const 0))`)
	example(none, 4, 2)
	example(greedy, 4, 2)
	// Output:
	// reply: +7 +452 +498 +357 (stop: max_tokens)
	// reply: +179 +481 +481 +481 (stop: max_tokens)
}

// The key-value store belongs to the conversation, not the instance: here
// each step appends "." to the key demo/steps, and the host holds the
// value after the reply (sessions save it; a new instance reads it).
func Example_keyValueStore() {
	kv, _ := example(controller(`
  (data (i32.const 512) "demo/steps.")
  (func (export "dw_step") (param i32 i32) (result i32)
    (drop (call $kv_append (i32.const 512) (i32.const 10) (i32.const 522) (i32.const 1)))
    (i32.const 0))`), 3, 0)
	v, _ := kv.Get("demo/steps")
	fmt.Printf("demo/steps = %q\n", v)
	// Output:
	// reply: +179 +481 +481 (stop: max_tokens)
	// demo/steps = "..."
}

// log shows text to the user under the controller's name; each "\n"
// starts a new line (a trailing one is dropped) and control characters
// are shown escaped, so a guest's text never passes for the host's.
func Example_log() {
	example(controller(`
  (data (i32.const 512) "first step\nsecond line \1b[31m\n")
  (func (export "dw_step") (param i32 i32) (result i32)
    (global.set $step (i32.add (global.get $step) (i32.const 1)))
    (if (i32.eq (global.get $step) (i32.const 1))
      (then (call $log (i32.const 512) (i32.const 29))))
    (i32.const 0))`), 2, 0)
	// Output:
	// [controller demo] first step
	// [controller demo] second line \x1b[31m
	// reply: +179 +481 (stop: max_tokens)
}

// tokenize encodes text as the model's tokenizer does, without BOS, and
// may be called from dw_load on. This controller tokenizes "hello world"
// in dw_load, into 4096 with room for 64 ids, and its step forces them
// and stops: the reply spells the text.
func Example_tokenize() {
	_, reply := example(module(`
  (data (i32.const 512) "hello world")
  (data (i32.const 1024) "\0a\00\00\00\00\00\00\00\00\00\00\00\00\10\00\00") ;; FORCE|STOP, force_ptr 4096
  (func (export "dw_load") (param i32 i32 i32) (result i32)
    (local $n i32)
    (local.set $n (call $tokenize (i32.const 512) (i32.const 11) (i32.const 4096) (i32.const 64)))
    (if (i32.gt_u (local.get $n) (i32.const 64)) ;; an error (negative), or more ids than room
      (then (return (i32.const 1))))
    (i32.store (i32.const 1040) (local.get $n)) ;; force_len
    (i32.const 0))
  (func (export "dw_step") (param i32 i32) (result i32) (i32.const 1024))`), 8, 0)
	fmt.Printf("%q\n", spell(reply))
	// Output:
	// reply: +257* +274* +78* +494* (stop: controller)
	// "hello world"
}

// trie hands over the host's token trie, read in place. This controller
// copies it in dw_load, finds the depth-0 node of the byte ' ' (going
// from one such node to the next by its end index), and masks the tokens
// of its subtree, the ids [first(i), first(end(i))): every token that
// starts with a space.
func Example_trie() {
	_, reply := example(module(`
  (data (i32.const 1024) "\01\00\00\00\00\08\00\00") ;; MASK, mask_ptr 2048
  ;; the address of node i of the trie at t: after the 16-byte header, 16 bytes each
  (func $node (param $t i32) (param $i i32) (result i32)
    (i32.add (i32.add (local.get $t) (i32.const 16)) (i32.shl (local.get $i) (i32.const 4))))
  (func (export "dw_load") (param i32 i32 i32) (result i32)
    (local $n i32) (local $t i32) (local $i i32) (local $j i32) (local $stop i32) (local $ids i32) (local $id i32) (local $w i32)
    (local.set $n (call $trie (i32.const 0) (i32.const 0))) ;; the size
    (local.set $t (global.get $heap))                       ;; 8-byte aligned
    (global.set $heap (i32.and (i32.add (i32.add (local.get $t) (local.get $n)) (i32.const 7)) (i32.const -8)))
    (drop (memory.grow (i32.sub (i32.add (i32.shr_u (global.get $heap) (i32.const 16)) (i32.const 1)) (memory.size))))
    (if (i32.ne (call $trie (local.get $t) (local.get $n)) (local.get $n))
      (then (return (i32.const 1))))
    ;; the depth-0 nodes: 0, end(0), end(end(0)), ... until n_nodes
    (loop $roots
      (if (i32.ge_u (local.get $i) (i32.load offset=4 (local.get $t)))
        (then (return (i32.const 2)))) ;; no token starts with ' '
      (if (i32.ne (i32.load8_u offset=14 (call $node (local.get $t) (local.get $i))) (i32.const 32))
        (then
          (local.set $i (i32.load (call $node (local.get $t) (local.get $i))))
          (br $roots))))
    ;; the ids follow the n_nodes + 1 nodes and the n_sets 32-byte sets
    (local.set $ids (i32.add (call $node (local.get $t) (i32.add (i32.load offset=4 (local.get $t)) (i32.const 1)))
      (i32.shl (i32.load offset=8 (local.get $t)) (i32.const 5))))
    (local.set $j (i32.load offset=4 (call $node (local.get $t) (local.get $i))))
    (local.set $stop (i32.load offset=4 (call $node (local.get $t) (i32.load (call $node (local.get $t) (local.get $i))))))
    (block $done (loop $each
      (br_if $done (i32.ge_u (local.get $j) (local.get $stop)))
      (local.set $id (i32.load (i32.add (local.get $ids) (i32.shl (local.get $j) (i32.const 2)))))
      (local.set $w (i32.add (i32.const 2048) (i32.shl (i32.shr_u (local.get $id) (i32.const 5)) (i32.const 2))))
      (i32.store (local.get $w) (i32.or (i32.load (local.get $w)) (i32.shl (i32.const 1) (local.get $id))))
      (local.set $j (i32.add (local.get $j) (i32.const 1)))
      (br $each)))
    (i32.const 0))
  (func (export "dw_step") (param i32 i32) (result i32) (i32.const 1024))`), 4, 1)
	fmt.Printf("%q\n", spell(reply))
	// Output:
	// reply: +273 +439 +494 +386 (stop: max_tokens)
	// " m book world pr"
}

// A trap (here unreachable, what a Go panic becomes) switches the
// controller off for the rest of the reply with one message; the reply
// goes on unconstrained, and the next reply gets a fresh instance.
func Example_trap() {
	example(controller(`
  (func (export "dw_step") (param i32 i32) (result i32) (unreachable))`), 3, 0)
	// Output:
	// [controller demo] dw_step trapped (unreachable: a panic or abort) (controller off until the next reply)
	// reply: +179 +481 +481 (stop: max_tokens)
}

// A controller says what argument it takes with the optional
// dw_describe: here that it needs one, a digit. The host shows the line
// where controllers are listed, and refuses a switch without the
// argument before dw_init runs; the previous controller (none here)
// stays active.
func Example_describe() {
	dir := golden.ModelDir("tiny-f32")
	tok, err := tokenizer.Load(filepath.Join(dir, "tokenizer.json"))
	check(err)
	rt := newWasmRuntime(defaultLimits(), "")
	defer rt.Close()
	mod, err := rt.Load("digit", []byte(controller(`
  (data (i32.const 3000) "\01\00\00\00\00\0c\00\00\07\00\00\00") ;; flags ARG_REQUIRED, text_ptr 3072, text_len 7
  (data (i32.const 3072) "a digit")
  (func (export "dw_describe") (result i32) (i32.const 3000))
  (func (export "dw_step") (param i32 i32) (result i32) (i32.const 0))`)))
	check(err)
	doc, required, err := mod.Describe()
	fmt.Printf("describes %q, required %v, error %v\n", doc, required, err)
	d := newDriver(rt, newVocabulary(tok, 512), newKVStore(), nil, nil)
	defer d.Close()
	fmt.Println(d.SwitchTo(mod, ""))
	active, _ := d.Current()
	fmt.Println("active:", active)
	// Output:
	// describes "a digit", required true, error <nil>
	// controller digit needs an argument: a digit
	// active: <nil>
}
