package sessions

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"

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

// Close unmaps the file.
func (s *Snapshot) Close() error { return s.file.Close() }

// Open reads and validates the snapshot at path: the safetensors header,
// the format and version, every tensor's name, dtype and shape against the
// header, and the data checksum. Nothing of the live conversation is
// touched; check the snapshot against the model with CheckModel before
// importing its KV state.
func Open(path string) (*Snapshot, error) {
	if err := limitedfile.Regular(path); err != nil {
		return nil, fmt.Errorf("session %w", err)
	}
	f, err := safetensors.Open(path)
	if err != nil {
		return nil, fmt.Errorf("session %w", err)
	}
	s, err := validate(f)
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
	meta, err := decodeMeta(f)
	if err != nil {
		return Meta{}, fmt.Errorf("session %s: %w", path, err)
	}
	return meta, nil
}

func decodeMeta(f *safetensors.File) (Meta, error) {
	var meta Meta
	raw, ok := f.Metadata[metaKey]
	if !ok {
		return meta, errors.New("not a Driftwood session (no " + metaKey + " metadata)")
	}
	if err := json.Unmarshal([]byte(raw), &meta); err != nil {
		return meta, fmt.Errorf("header is not valid JSON: %v", err)
	}
	switch {
	case meta.Format != Format:
		return meta, fmt.Errorf("format %q is not %q", meta.Format, Format)
	case meta.Version > Version:
		return meta, fmt.Errorf("format version %d is newer than this Driftwood's %d: upgrade Driftwood to open it", meta.Version, Version)
	case meta.Version < 1:
		return meta, fmt.Errorf("format version %d is invalid", meta.Version)
	}
	return meta, nil
}

func validate(f *safetensors.File) (*Snapshot, error) {
	meta, err := decodeMeta(f)
	if err != nil {
		return nil, err
	}
	kv := meta.KV
	if kv.Layers < 0 || kv.Len != len(meta.Tokens) || kv.DType.Size() == 0 {
		return nil, fmt.Errorf("header describes %d layers of %d positions (%d tokens) in %q", kv.Layers, kv.Len, len(meta.Tokens), kv.DType)
	}
	sys := 0
	if len(meta.Messages) > 0 && meta.Messages[0].Role == "system" {
		sys = 1
	}
	if meta.OutOfView < 0 || meta.OutOfView > len(meta.Messages)-sys {
		return nil, fmt.Errorf("header says %d messages are out of the model's view, but there are %d", meta.OutOfView, len(meta.Messages))
	}
	if want := 2 * kv.Layers; len(f.Tensors) != want {
		return nil, fmt.Errorf("%d tensors, want %d (keys and values of %d layers)", len(f.Tensors), want, kv.Layers)
	}
	state := &engine.KVState{Len: kv.Len, KVHeads: kv.KVHeads, HeadDim: kv.HeadDim, DType: kv.DType,
		K: make([][]byte, kv.Layers), V: make([][]byte, kv.Layers)}
	shape := []int{1, kv.KVHeads, kv.Len, kv.HeadDim}
	var crc uint32
	for l := 0; l < kv.Layers; l++ {
		for _, name := range []string{keyName(l), valueName(l)} {
			t, ok := f.Tensors[name]
			switch {
			case !ok:
				return nil, fmt.Errorf("missing tensor %s", name)
			case t.DType != kv.DType || !slices.Equal(t.Shape, shape):
				return nil, fmt.Errorf("tensor %s is %s %v, the header says %s %v", name, t.DType, t.Shape, kv.DType, shape)
			}
			crc = crc32.Update(crc, castagnoli, t.Data)
		}
		state.K[l], state.V[l] = f.Tensors[keyName(l)].Data, f.Tensors[valueName(l)].Data
	}
	if crc != kv.CRC32C {
		return nil, fmt.Errorf("tensor data is corrupt (checksum %08x, header says %08x)", crc, kv.CRC32C)
	}
	return &Snapshot{Meta: meta, KV: state, file: f}, nil
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
