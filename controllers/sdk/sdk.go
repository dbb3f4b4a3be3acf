// Package sdk is the Go guest SDK for Driftwood controllers: WebAssembly
// modules that see every token of a reply and decide what may come next
// (controllers/ABI.md is the contract with the host).
//
// A controller implements Controller and registers itself from package
// main:
//
//	func init() { sdk.Register(func() sdk.Controller { return new(myController) }) }
//	func main() {}
//
// and is built with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o my.wasm ./my
//
// The exports and imports of the ABI live in the wasip1-only files of this
// package; everything else (Vocab, Mask, Result, Trie, Constraint) is
// portable Go, used natively by the host and by tests (see package
// sdktest, which drives a controller as the host would, without Wasm).
// The bytes exchanged with the host (the result record, the vocabulary,
// the trie) are encoded by package controllers/abi, which the host uses
// too.
package sdk

// Host is what the host offers a controller besides the per-step calls.
type Host interface {
	// Log shows a line to the user.
	Log(msg string)
	// KVGet returns the value of key in the conversation's key-value
	// store, and whether it is present.
	KVGet(key string) ([]byte, bool)
	// KVSet sets key; false when over the store's limits.
	KVSet(key string, val []byte) bool
	// KVAppend appends val to key's value, creating it; false when over
	// the store's limits.
	KVAppend(key string, val []byte) bool
	// Tokenize encodes text as plain text (special-token text is not
	// special).
	Tokenize(text string) []int32
}

// Controller is the guest side of the ABI. The SDK calls Init once per
// instance, Begin at the start of each reply and Step once per generated
// token.
type Controller interface {
	// Init receives the controller's argument (a regex, a JSON schema...),
	// the vocabulary and the host. An error refuses the argument: the SDK
	// logs it and the host disables the controller.
	Init(arg string, v *Vocab, h Host) error
	// Begin starts a reply. prompt holds the conversation tokens added
	// since the instance last saw it: with a chat template they end with
	// the assistant header, without one with the prompt's last token
	// (ABI.md, What dw_begin is given). An error refuses the reply: the
	// SDK logs it and the host disables the controller until the next.
	// Token slices handed to Begin and Step are only valid during the
	// call.
	Begin(prompt []int32) error
	// Step receives the reply tokens appended since the previous step
	// (forced ones included; none at the first step) and fills r, which
	// arrives Reset. Everything r points to (mask, forced tokens) must
	// stay unchanged until the next call.
	Step(appended []int32, r *Result)
}

// Loader is an optional interface of a Controller. The SDK calls Load
// when the host prepares the instance (dw_load), before Init and often
// well ahead of it: work that needs the vocabulary but not the argument
// (Vocab.Trie, Vocab.PrepareClasses, tables of its own) done there is off
// the time a switch to the controller takes.
type Loader interface {
	Load(v *Vocab)
}

// Describer is an optional interface of a Controller: Describe says, in
// one line for the user, what argument it takes ("a JSON array of
// strings, one of which the reply is"), and whether it needs one. The
// host shows the line where controllers are listed and in the error of a
// refused switch, and refuses an empty argument to a controller that
// needs one before Init is called. The SDK calls it (dw_describe) on a
// controller made only for that, before Load: it must not depend on
// either.
type Describer interface {
	Describe() (arg string, required bool)
}

// newController is the constructor given to Register.
var newController func() Controller

// Register sets the constructor of the module's controller; call it from
// an init function of package main. The SDK calls it once per instance,
// at dw_load.
func Register(f func() Controller) { newController = f }
