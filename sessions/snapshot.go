// Package sessions saves and restores conversations as KV-cache snapshots:
// one safetensors file per conversation holding the K and V tensors of the
// used positions and a JSON header with everything else (tokens,
// transcript, sampler, controller state, fingerprints, checksums), so that
// resuming a conversation restores the model's state without re-reading
// the conversation.
//
// The tensors are named and shaped as mlx-lm's save_prompt_cache writes
// them ("{layer}.0" keys, "{layer}.1" values, (1, kv_heads, len,
// head_dim)), with its metadata keys, so mlx-lm's load_prompt_cache can
// read a Driftwood snapshot; Driftwood's own header sits under
// "1.driftwood".
package sessions

import (
	"encoding/json"
	"fmt"
	"hash/crc32"
	"strconv"
	"time"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/chat"
	"github.com/driftwoodlabs/driftwood/engine/safetensors"
)

// Format and Version identify snapshot files.
const (
	Format  = "driftwood-session"
	Version = 1
)

// metaKey is the safetensors metadata key holding the JSON header: item 1
// of mlx-lm's [cache_info, metadata, cache_classes], key "driftwood".
const metaKey = "1.driftwood"

// Meta is a snapshot's header.
type Meta struct {
	Format  string    `json:"format"`
	Version int       `json:"version"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
	// Model describes the model for people; ModelFingerprint identifies it
	// (engine.Model.Fingerprint).
	Model            string `json:"model"`
	ModelFingerprint string `json:"model_fingerprint"`
	// ModelSource says what opens the model again (absent in files
	// written before it was kept).
	ModelSource *ModelSource `json:"model_source,omitempty"`
	// TokenizerFingerprint is tokenizer.Tokenizer.Fingerprint.
	TokenizerFingerprint string `json:"tokenizer_fingerprint"`
	// Tokens are the token ids the KV tensors hold, in order.
	Tokens []int32 `json:"tokens"`
	// Messages keep chat.Message's JSON, the OpenAI message shape that
	// chat templates read: a stable format of its own.
	Messages []chat.Message `json:"messages"`
	// ReplySeeds holds the sampler seed of each assistant message, in
	// order (engine.Stats.Seed; 0 where it is not known, as in files
	// written before it was kept).
	ReplySeeds []uint64 `json:"reply_seeds,omitempty"`
	// OutOfView is how many messages, the oldest after the system
	// message, the model no longer sees: Tokens hold the rest. Absent
	// means none.
	OutOfView int      `json:"out_of_view,omitempty"`
	Sampler   Sampling `json:"sampler"`
	// EnableThinking is the chat's thinking switch
	// (chat.Options.EnableThinking); absent, as in files written before
	// it was kept, the template decides.
	EnableThinking *bool `json:"enable_thinking,omitempty"`
	// Controller is the active controller, if any.
	Controller *Controller `json:"controller,omitempty"`
	// ReplyTokens are, for each assistant message in order, the token ids
	// it was generated as (absent where not known): the next prompt holds
	// them rather than the message's text encoded again, which need not
	// give them back.
	ReplyTokens [][]int32 `json:"reply_tokens,omitempty"`
	// ReplyControls says, for each assistant message in order, which
	// controllers governed it (nil where not known, as in files written
	// before it was kept, or where the reply ran with none).
	ReplyControls [][]ReplyControl `json:"reply_controls,omitempty"`
	// KV describes the tensors; DataCRC32C checks them.
	KV KVInfo `json:"kv"`
}

// Sampling is the sampler settings as a snapshot stores them. The keys
// are written here, not taken from engine.SamplerConfig's field names, so
// that renaming an engine field cannot break saved sessions (format
// version 1 wrote those names, so they are the keys).
type Sampling struct {
	Temperature   float64 `json:"Temperature"`
	TopK          int     `json:"TopK"`
	TopP          float64 `json:"TopP"`
	MinP          float64 `json:"MinP"`
	RepeatPenalty float64 `json:"RepeatPenalty"`
	RepeatLastN   int     `json:"RepeatLastN"`
	Seed          uint64  `json:"Seed"`
}

// SamplingOf is the stored form of c.
func SamplingOf(c engine.SamplerConfig) Sampling {
	return Sampling{Temperature: c.Temperature, TopK: c.TopK, TopP: c.TopP, MinP: c.MinP,
		RepeatPenalty: c.RepeatPenalty, RepeatLastN: c.RepeatLastN, Seed: c.Seed}
}

// Config is the engine's form of s.
func (s Sampling) Config() engine.SamplerConfig {
	return engine.SamplerConfig{Temperature: s.Temperature, TopK: s.TopK, TopP: s.TopP, MinP: s.MinP,
		RepeatPenalty: s.RepeatPenalty, RepeatLastN: s.RepeatLastN, Seed: s.Seed}
}

// Controller is the state of a conversation's controller.
type Controller struct {
	Name string `json:"name"`
	// Path is the file it was loaded from, when it was given by path
	// (absent for one found by name).
	Path   string `json:"path,omitempty"`
	Arg    string `json:"arg"`
	SHA256 string `json:"sha256"`
	// KV is the controller's key-value store.
	KV map[string][]byte `json:"kv,omitempty"`
}

// ReplyControl is one stretch of a reply under one controller, or under
// none: from its From-th token (counted from the reply's start when the
// stretch began) until the next stretch or the reply's end.
type ReplyControl struct {
	From int `json:"from"`
	// Name and Arg are the controller ("" when none ran).
	Name string `json:"name,omitempty"`
	Arg  string `json:"arg,omitempty"`
	// Fault, when set, says why the controller was switched off at From:
	// the stretch ran with none.
	Fault string `json:"fault,omitempty"`
}

// KVInfo describes the snapshot's tensors.
type KVInfo struct {
	Layers  int               `json:"layers"`
	Len     int               `json:"len"`
	KVHeads int               `json:"kv_heads"`
	HeadDim int               `json:"head_dim"`
	DType   safetensors.DType `json:"dtype"`
	// CRC32C is the Castagnoli CRC of every tensor's bytes in layer order,
	// keys before values: hardware-accelerated, so checking a 4,096-token
	// snapshot costs milliseconds, not a hash's hundreds.
	CRC32C uint32 `json:"crc32c"`
}

// Turns counts the user messages.
func (m *Meta) Turns() int {
	n := 0
	for _, msg := range m.Messages {
		if msg.Role == "user" {
			n++
		}
	}
	return n
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func keyName(layer int) string   { return strconv.Itoa(layer) + ".0" }
func valueName(layer int) string { return strconv.Itoa(layer) + ".1" }

// tensors lays kv out as mlx-lm does and computes its checksum.
func tensors(kv *engine.KVState) ([]safetensors.Tensor, uint32) {
	shape := []int{1, kv.KVHeads, kv.Len, kv.HeadDim}
	var out []safetensors.Tensor
	var crc uint32
	for l := range kv.K {
		out = append(out,
			safetensors.Tensor{Name: keyName(l), DType: kv.DType, Shape: shape, Data: kv.K[l]},
			safetensors.Tensor{Name: valueName(l), DType: kv.DType, Shape: shape, Data: kv.V[l]})
		crc = crc32.Update(crc, castagnoli, kv.K[l])
		crc = crc32.Update(crc, castagnoli, kv.V[l])
	}
	return out, crc
}

// mlxMetadata is the metadata mlx-lm's load_prompt_cache expects around
// Driftwood's header: per layer an empty meta state and the class name.
func mlxMetadata(layers int, header []byte) map[string]string {
	md := map[string]string{metaKey: string(header)}
	for l := 0; l < layers; l++ {
		md["0."+strconv.Itoa(l)] = ""
		md["2."+strconv.Itoa(l)] = "KVCache"
	}
	return md
}

// encodeMeta fills the KV description and checksum into meta and returns
// the tensors and the metadata to write.
func encodeMeta(meta Meta, kv *engine.KVState) ([]safetensors.Tensor, map[string]string, error) {
	if len(kv.K) != len(kv.V) {
		return nil, nil, fmt.Errorf("KV state has %d key and %d value layers", len(kv.K), len(kv.V))
	}
	if len(meta.Tokens) != kv.Len {
		return nil, nil, fmt.Errorf("%d tokens for %d cached positions", len(meta.Tokens), kv.Len)
	}
	ts, crc := tensors(kv)
	meta.Format, meta.Version = Format, Version
	meta.KV = KVInfo{Layers: len(kv.K), Len: kv.Len, KVHeads: kv.KVHeads, HeadDim: kv.HeadDim, DType: kv.DType, CRC32C: crc}
	header, err := json.Marshal(meta)
	if err != nil {
		return nil, nil, err
	}
	return ts, mlxMetadata(len(kv.K), header), nil
}
