package sessions

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/safetensors"
	"github.com/driftwoodlabs/driftwood/internal/atomicfile"
	"github.com/driftwoodlabs/driftwood/internal/limitedfile"
)

// Save writes a snapshot of meta and kv to path atomically (a temporary
// file in the same folder, fsync, rename, fsync of the folder): a crash at
// any moment leaves the old snapshot or the new one, never a torn file.
// Only its owner may read it (mode 0600): it holds a conversation.
func Save(path string, meta Meta, kv *engine.KVState) error {
	return save(path, meta, kv, nil)
}

// save is Save with the file's writer wrapped (tests simulate a full
// disk).
func save(path string, meta Meta, kv *engine.KVState, wrap func(io.Writer) io.Writer) error {
	// Only the holder of the session's Claim saves, so any temporary file
	// of this path is a dead process's.
	atomicfile.RemoveStale(path)
	return write(path, meta, kv, wrap)
}

// write writes the snapshot file atomically, leaving other temporary
// files of path alone.
func write(path string, meta Meta, kv *engine.KVState, wrap func(io.Writer) io.Writer) error {
	ts, md, err := encodeMeta(meta, kv)
	if err != nil {
		return fmt.Errorf("session %s: %w", path, err)
	}
	err = atomicfile.WriteMode(path, 0o600, func(w io.Writer) error {
		if wrap != nil {
			w = wrap(w)
		}
		return safetensors.Encode(w, md, ts)
	})
	if err != nil {
		return fmt.Errorf("session not saved (the previous copy, if any, is intact): %w", err)
	}
	return nil
}

// Snapshot is an opened, fully validated snapshot file. Its KV tensors are
// views into the mapped file, valid until Close.
type Snapshot struct {
	Path string
	Meta Meta
	KV   *engine.KVState
	file *safetensors.File
}

// Close unmaps the file, unless a cache holds its KV state
// (engine.KVState.Hold), which then unmaps it when done.
func (s *Snapshot) Close() error { return s.file.Close() }

// Open reads and validates the snapshot at path: the safetensors header,
// the format and version, every tensor's name, dtype and shape and the
// metadata's layout against the header, the data checksum, and the
// numbers mlx-lm keeps (offsets, group size, bits). A prompt cache that
// mlx-lm saved is refused with a *ForeignError. Nothing of the live
// conversation is touched; check the snapshot against the model with
// CheckModel before importing its KV state.
func Open(path string) (*Snapshot, error) {
	if err := limitedfile.Regular(path); err != nil {
		return nil, fmt.Errorf("session %w", err)
	}
	// Copy-on-write, so that a cache may adopt the KV state in place
	// (engine.KVState.Hold) and write over it.
	f, err := safetensors.OpenPrivate(path)
	if err != nil {
		return nil, fmt.Errorf("session %w", err)
	}
	s, err := validate(f)
	if fe := (*ForeignError)(nil); errors.As(err, &fe) {
		fe.Path = path
		// Say what is wrong with a damaged one rather than what it is.
		if _, perr := readPromptCache(f); perr != nil {
			err = perr
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("session %s: %w", path, err)
	}
	s.Path = path
	return s, nil
}

// ReadMeta reads only a snapshot's header (for listings): no checksum.
func ReadMeta(path string) (Meta, error) {
	if err := limitedfile.Regular(path); err != nil {
		return Meta{}, fmt.Errorf("session %w", err)
	}
	f, err := safetensors.Open(path)
	if err != nil {
		return Meta{}, fmt.Errorf("session %w", err)
	}
	defer f.Close()
	meta, _, err := decodeMeta(f)
	if fe := (*ForeignError)(nil); errors.As(err, &fe) {
		fe.Path = path
	}
	if err != nil {
		return Meta{}, fmt.Errorf("session %s: %w", path, err)
	}
	return meta, nil
}

// ForeignError is Open's and ReadMeta's error for a prompt cache that
// mlx-lm saved (mlx_lm.cache_prompt, save_prompt_cache): it holds a
// model's state but neither the token ids that state stands for nor a
// transcript, so Driftwood cannot continue it as it is: the next prompt
// would not know what precedes it. OpenPromptCache reads its state, and
// `driftwood sessions import` makes a session of it (the ids read back
// from the state by the CPU backend's RecoverTokens).
type ForeignError struct {
	// Model is mlx-lm's "model" metadata, what the cache was made with
	// ("" when absent).
	Model string
	// Path is the file ("" when not known).
	Path string
}

func (e *ForeignError) Error() string {
	model := "an unnamed model"
	if e.Model != "" {
		model = e.Model
	}
	file := "FILE"
	if e.Path != "" {
		file = e.Path
	}
	return "a prompt cache mlx-lm saved for " + model + ", not a Driftwood session: mlx-lm keeps no token ids or transcript with the model's state, " +
		"which Driftwood needs to continue a conversation (`driftwood sessions import " + file + " --name NAME` makes a session of it, its tokens read back from the model's state; mlx_lm.generate --prompt-cache-file continues it as it is)"
}

// decodeMeta reads the header of a snapshot file and its metadata's
// layout.
func decodeMeta(f *safetensors.File) (Meta, *cacheMeta, error) {
	var meta Meta
	cm, err := parseCacheMeta(f.Metadata)
	if err != nil {
		return meta, nil, fmt.Errorf("not a Driftwood session (%v)", err)
	}
	raw, ok := cm.metadata[headerKey]
	if !ok {
		if len(cm.classes) > 0 {
			return meta, nil, &ForeignError{Model: cm.metadata["model"]}
		}
		return meta, nil, errors.New("not a Driftwood session (no driftwood metadata)")
	}
	if err := json.Unmarshal([]byte(raw), &meta); err != nil {
		return meta, nil, fmt.Errorf("header is not valid JSON: %v", err)
	}
	switch {
	case meta.Format != Format:
		return meta, nil, fmt.Errorf("format %q is not %q", meta.Format, Format)
	case meta.Version > Version:
		return meta, nil, fmt.Errorf("format version %d is newer than this Driftwood's %d: upgrade Driftwood to open it", meta.Version, Version)
	case meta.Version < 1:
		return meta, nil, fmt.Errorf("format version %d is invalid", meta.Version)
	case meta.Version == 1 && cm.layout != layoutMetaState, meta.Version >= 2 && cm.layout != layoutScalars:
		return meta, nil, fmt.Errorf("format version %d in the other mlx-lm layout", meta.Version)
	}
	return meta, cm, nil
}

func validate(f *safetensors.File) (*Snapshot, error) {
	meta, cm, err := decodeMeta(f)
	if err != nil {
		return nil, err
	}
	kv := meta.KV
	if kv.Layers < 0 || kv.Len != len(meta.Tokens) {
		return nil, fmt.Errorf("header describes %d layers of %d positions (%d tokens)", kv.Layers, kv.Len, len(meta.Tokens))
	}
	sys := 0
	if len(meta.Messages) > 0 && meta.Messages[0].Role == "system" {
		sys = 1
	}
	if meta.OutOfView < 0 || meta.OutOfView > len(meta.Messages)-sys {
		return nil, fmt.Errorf("header says %d messages are out of the model's view, but there are %d", meta.OutOfView, len(meta.Messages))
	}
	if n := meta.Imported; n != 0 && (n < 0 || n > len(meta.Tokens) || meta.OutOfView != 0 || len(meta.Messages) <= sys || meta.Messages[sys].Role != "user") {
		return nil, fmt.Errorf("header says the first %d of %d tokens were imported, with %d messages out of view, but the first message after the system message is not a user message in view that could hold them", n, len(meta.Tokens), meta.OutOfView)
	}
	s := &cacheShape{layout: cm.layout, class: classKV, layers: kv.Layers, heads: kv.KVHeads, headDim: kv.HeadDim,
		capacity: kv.Len, len: kv.Len, dtype: kv.DType}
	if q := kv.Quant; q != nil {
		if kv.DType != safetensors.U32 {
			return nil, fmt.Errorf("header describes quantised keys and values in %q, want U32", kv.DType)
		}
		s.class, s.dtype, s.group, s.bits = classQuant, q.ScaleDType, q.GroupSize, q.Bits
	}
	if err := s.checkNumbers(); err != nil {
		return nil, fmt.Errorf("header describes %w", err)
	}
	ts, err := checkTensors(f, cm, s, "the header says")
	if err != nil {
		return nil, err
	}
	var crc uint32
	for _, t := range ts {
		crc = crc32Update(crc, t.Data)
	}
	if crc != kv.CRC32C {
		return nil, fmt.Errorf("tensor data is corrupt (checksum %08x, header says %08x)", crc, kv.CRC32C)
	}
	if err := checkNumbers(f, cm, s, "the header says"); err != nil {
		return nil, err
	}
	state := kvState(s, ts)
	if s.len == s.capacity {
		state.Hold = f.Hold // views into the file's copy-on-write mapping (Open)
	}
	return &Snapshot{Meta: meta, KV: state, file: f}, nil
}

// PromptCache is a file in mlx-lm's prompt-cache layout, one that mlx-lm
// saved or a Driftwood session, read and validated as mlx-lm's: the
// model's state, without the tokens it stands for. Its KV tensors are
// views into the mapped file (copies where mlx-lm's buffer holds more
// positions than it used), valid until Close.
type PromptCache struct {
	Path string
	// Metadata is the file's metadata dict: mlx-lm's "model" and
	// "tokenizer_config"; a session's header under "driftwood" (not read
	// here: Open reads and checks it).
	Metadata map[string]string
	// Class is every layer's cache class, "KVCache" or "QuantizedKVCache".
	Class string
	KV    *engine.KVState
	file  *safetensors.File
}

// Close unmaps the file.
func (p *PromptCache) Close() error { return p.file.Close() }

// OpenPromptCache reads and validates the prompt cache at path: its
// layout (either of mlx-lm's), class, every tensor's name, dtype and
// shape, and its numbers. There is no checksum to check in mlx-lm's
// files.
func OpenPromptCache(path string) (*PromptCache, error) {
	if err := limitedfile.Regular(path); err != nil {
		return nil, fmt.Errorf("prompt cache %w", err)
	}
	f, err := safetensors.Open(path)
	if err != nil {
		return nil, fmt.Errorf("prompt cache %w", err)
	}
	p, err := readPromptCache(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("prompt cache %s: %w", path, err)
	}
	p.Path = path
	return p, nil
}

func readPromptCache(f *safetensors.File) (*PromptCache, error) {
	cm, err := parseCacheMeta(f.Metadata)
	if err != nil {
		return nil, fmt.Errorf("not an mlx-lm prompt cache (%v)", err)
	}
	s, err := readShape(f, cm)
	if err != nil {
		return nil, err
	}
	ts, err := checkTensors(f, cm, s, "layer 0 has")
	if err != nil {
		return nil, err
	}
	if err := checkNumbers(f, cm, s, "layer 0 has"); err != nil {
		return nil, err
	}
	return &PromptCache{Metadata: cm.metadata, Class: s.class, KV: kvState(s, ts), file: f}, nil
}

// CheckModel says whether the snapshot's KV state belongs to model m with
// tokenizer fingerprint tok, and if not, what differs. The transcript of a
// snapshot that fails it can still be re-prefilled on any model.
func (s *Snapshot) CheckModel(m *engine.Model, tok string, window int) error {
	switch {
	case s.Meta.ModelFingerprint != m.Fingerprint && s.Meta.Model == m.Config.Describe():
		// The fingerprint samples the weights: a fine-tune of the same
		// shape differs, as does every session saved before it did.
		return fmt.Errorf("session %s was made with other weights of the same shape (%s): another fine-tune or merge, or a Driftwood before model fingerprints covered the weights", s.Path, s.Meta.Model)
	case s.Meta.ModelFingerprint != m.Fingerprint:
		return fmt.Errorf("session %s was made with %s, not %s (a different model or quantisation)", s.Path, s.Meta.Model, m.Config.Describe())
	case s.Meta.TokenizerFingerprint != tok:
		return fmt.Errorf("session %s was made with a different tokenizer", s.Path)
	}
	if err := m.Config.ValidateKV(s.KV, window); err != nil {
		return fmt.Errorf("session %s: %w", s.Path, err)
	}
	return nil
}
