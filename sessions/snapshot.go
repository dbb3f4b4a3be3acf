// Package sessions saves and restores conversations as KV-cache snapshots:
// one safetensors file per conversation holding the K and V tensors of the
// used positions and a JSON header with everything else (tokens,
// transcript, sampler, controller state, fingerprints, checksums), so that
// resuming a conversation restores the model's state without re-reading
// the conversation.
//
// A snapshot is a prompt-cache file of mlx-lm's (mlxlm.go describes the
// layouts), so that mlx_lm.generate --prompt-cache-file continues a
// Driftwood conversation: per layer a KVCache ("{layer}.0" keys,
// "{layer}.1" values, (1, kv_heads, len, head_dim), in F32, F16 or BF16)
// or, for a quantised cache, a QuantizedKVCache; mlx-lm's metadata
// ("model", "tokenizer_config"); and Driftwood's header as the metadata
// entry "driftwood". A prompt cache that mlx-lm saved holds no tokens or
// transcript: Open refuses it (ForeignError), OpenPromptCache reads its
// model state, and `driftwood sessions import` makes a session of it
// (Meta.Imported).
package sessions

import (
	"encoding/json"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/chat"
	"github.com/driftwoodlabs/driftwood/engine/safetensors"
	"github.com/driftwoodlabs/driftwood/internal/controlrecord"
)

// Format and Version identify snapshot files. Version 1 was written in
// mlx-lm's older layout (layoutMetaState), version 2 in its newer
// (layoutScalars); both are read.
const (
	Format  = "driftwood-session"
	Version = 2
)

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
	OutOfView int `json:"out_of_view,omitempty"`
	// Imported, when not zero, says that the first Imported of Tokens are
	// a model state brought in from elsewhere (`driftwood sessions
	// import`: a prompt cache mlx-lm saved, which keeps no messages): the
	// first message after the system message, a user message, holds
	// their text, but the model sees the tokens as they are, and the
	// messages after it rendered after them (conversation says how).
	// Absent once that message is out of view.
	Imported int      `json:"imported,omitempty"`
	Sampler  Sampling `json:"sampler"`
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

// Controller is the state of a conversation's controller, as the
// controller host records it (controlrecord.Controller).
type Controller = controlrecord.Controller

// ReplyControl is one stretch of a reply under one controller, or under
// none (controlrecord.ReplyControl).
type ReplyControl = controlrecord.ReplyControl

// KVInfo describes the snapshot's tensors.
type KVInfo struct {
	Layers  int `json:"layers"`
	Len     int `json:"len"`
	KVHeads int `json:"kv_heads"`
	HeadDim int `json:"head_dim"`
	// DType is the keys' and values': F32, F16 or BF16, or U32 (the
	// packed codes) when Quant is set.
	DType safetensors.DType `json:"dtype"`
	// Quant, when set, says the keys and values are quantised as mlx-lm's
	// QuantizedKVCache (engine.KVQuant).
	Quant *QuantInfo `json:"quant,omitempty"`
	// CRC32C is the Castagnoli CRC of every tensor's bytes, layer by
	// layer in the order of mlx-lm's cache state (keys before values; a
	// quantised cache's codes, scales, biases; then the numbers):
	// hardware-accelerated, so checking a 4,096-token snapshot costs
	// milliseconds, not a hash's hundreds.
	CRC32C uint32 `json:"crc32c"`
}

// QuantInfo is a quantised snapshot's parameters: codes of Bits bits,
// one scale and bias in ScaleDType per GroupSize values.
type QuantInfo struct {
	GroupSize  int               `json:"group_size"`
	Bits       int               `json:"bits"`
	ScaleDType safetensors.DType `json:"scale_dtype"`
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

func crc32Update(crc uint32, b []byte) uint32 { return crc32.Update(crc, castagnoli, b) }

// mlxModel is what mlx-lm's load opens the model by: the repo id of a
// Hugging Face repo of safetensors (what mlx-lm users name it by),
// else the model's path; "" when the snapshot does not know it.
func mlxModel(src *ModelSource) string {
	switch {
	case src == nil:
		return ""
	case src.Repo != "" && src.File == "":
		return src.Repo
	}
	return src.Path
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
	s, ts, crc, err := encodeCache(kv)
	if err != nil {
		return nil, nil, err
	}
	meta.Format, meta.Version = Format, Version
	meta.KV = KVInfo{Layers: len(kv.K), Len: kv.Len, KVHeads: kv.KVHeads, HeadDim: kv.HeadDim, DType: kv.DType, CRC32C: crc}
	if q := kv.Quant; q != nil {
		meta.KV.Quant = &QuantInfo{GroupSize: q.Group, Bits: q.Bits, ScaleDType: q.ScaleDType}
	}
	header, err := json.Marshal(meta)
	if err != nil {
		return nil, nil, err
	}
	// mlx_lm.generate reads "model" and "tokenizer_config" (keyword
	// arguments for the tokenizer: none).
	md := cacheMetadata(s, map[string]string{headerKey: string(header), "model": mlxModel(meta.ModelSource), "tokenizer_config": "{}"})
	return ts, md, nil
}
