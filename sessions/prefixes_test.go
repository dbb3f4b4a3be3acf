package sessions

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/internal/golden"
)

// memCache is an engine.Cache that holds a KVState as it is.
type memCache struct{ kv *engine.KVState }

func (c *memCache) Len() int {
	if c.kv == nil {
		return 0
	}
	return c.kv.Len
}
func (c *memCache) Window() int { return 512 }
func (c *memCache) Truncate(n int) {
	if n == 0 {
		c.kv = nil
	} else {
		c.kv = c.kv.Head(n)
	}
}
func (c *memCache) Export() (*engine.KVState, error) { return c.kv, nil }
func (c *memCache) Import(s *engine.KVState) error   { c.kv = s; return nil }
func (c *memCache) Close() error                     { return nil }

// prefixOf is n token ids starting at first.
func prefixOf(first, n int) []int32 {
	p := make([]int32, n)
	for i := range p {
		p[i] = int32(first + i)
	}
	return p
}

// keep stores prefix's entry for model m and tokenizer tok.
func keep(t *testing.T, p *Prefixes, m *engine.Model, tok string, prefix []int32) {
	t.Helper()
	_, kv := sample(len(prefix), byte(prefix[0]))
	seq := &engine.Sequence{Tokens: slices.Clone(prefix), Cache: &memCache{kv: kv}}
	if err := p.Keep(seq, m, tok, prefix); err != nil {
		t.Fatal(err)
	}
}

// restore looks prefix up for a prompt that goes on past it.
func restore(p *Prefixes, m *engine.Model, tok string, prefix []int32) (int, error) {
	seq := &engine.Sequence{Cache: &memCache{}}
	return p.Restore(seq, m, tok, prefix, append(slices.Clone(prefix), 1))
}

func loadModel(t *testing.T, dir string) *engine.Model {
	t.Helper()
	m, err := engine.LoadModel(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// asRoot skips a test that gives a file away to another user.
func asRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipped: giving a file to another user needs root")
	}
}

// TestScaledCopyIsAnotherModel: tiny-f32 with every *_proj.weight scaled
// by 1.5 and the header kept (a fine-tune of the same shape) neither
// finds the original's prefix entry nor takes its session. Both used to
// happen silently: the fingerprint hashed only config.json and headers.
func TestScaledCopyIsAnotherModel(t *testing.T) {
	base := loadModel(t, golden.ModelDir("tiny-f32"))
	scaled := loadModel(t, golden.ScaledCopy(t, "tiny-f32", 1.5))
	p := &Prefixes{Dir: filepath.Join(t.TempDir(), "prefixes"), Limit: 1 << 30}
	prefix := prefixOf(10, MinPrefix)
	keep(t, p, base, "tok", prefix)
	if n, err := restore(p, base, "tok", prefix); n != len(prefix) || err != nil {
		t.Fatalf("the model's own entry: %d restored, %v", n, err)
	}
	if n, err := restore(p, scaled, "tok", prefix); n != 0 || err != nil {
		t.Errorf("the scaled copy: %d restored from the original's entry (%v), want a miss", n, err)
	}

	path := filepath.Join(t.TempDir(), "s.safetensors")
	meta, kv := sample(3, 0)
	meta.ModelFingerprint = base.Fingerprint
	if err := Save(path, meta, kv); err != nil {
		t.Fatal(err)
	}
	snap, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	if err := snap.CheckModel(scaled, "tok", 512); err == nil {
		t.Error("the original's session restores on the scaled copy")
	}
	meta.Model = base.Config.Describe()
	Save(path, meta, kv)
	again, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if err := again.CheckModel(scaled, "tok", 512); err == nil || !strings.Contains(err.Error(), "other weights of the same shape") {
		t.Errorf("the original's session on the scaled copy: %v, want an error saying other weights of the same shape", err)
	}
}

// TestPrefixEntriesTrustNothing: an entry is used only when it is a
// regular file of the user's that no one else may write and holds what
// its name stands for; any other is removed, and Restore says why. Each
// of these used to be restored.
func TestPrefixEntriesTrustNothing(t *testing.T) {
	base := loadModel(t, golden.ModelDir("tiny-f32"))
	scaled := loadModel(t, golden.ScaledCopy(t, "tiny-f32", 1.5))
	prefix, other := prefixOf(10, MinPrefix), prefixOf(20, MinPrefix)
	cases := []struct {
		reason, want string
		spoil        func(t *testing.T, p *Prefixes, entry string)
	}{
		{"group-writable", "may be written by others", func(t *testing.T, p *Prefixes, entry string) { os.Chmod(entry, 0o660) }},
		{"writable by all", "may be written by others", func(t *testing.T, p *Prefixes, entry string) { os.Chmod(entry, 0o666) }},
		{"another user's (planted)", "belongs to uid 4242", func(t *testing.T, p *Prefixes, entry string) {
			asRoot(t)
			os.Chown(entry, 4242, 4242)
		}},
		{"a link to a good entry", "cannot be opened", func(t *testing.T, p *Prefixes, entry string) {
			target := filepath.Join(t.TempDir(), "target")
			os.Rename(entry, target)
			os.Symlink(target, entry)
		}},
		{"another prefix's entry renamed into place", "holds other tokens than its name says", func(t *testing.T, p *Prefixes, entry string) {
			keep(t, p, base, "tok", other)
			os.Rename(p.path(base, "tok", other), entry)
		}},
		{"another tokenizer's entry renamed into place", "another tokenizer than its name says", func(t *testing.T, p *Prefixes, entry string) {
			keep(t, p, base, "other", prefix)
			os.Rename(p.path(base, "other", prefix), entry)
		}},
		{"another model's entry renamed into place", "another model than its name says", func(t *testing.T, p *Prefixes, entry string) {
			keep(t, p, scaled, "tok", prefix)
			os.Rename(p.path(scaled, "tok", prefix), entry)
		}},
	}
	for _, c := range cases {
		t.Run(c.reason, func(t *testing.T) {
			p := &Prefixes{Dir: filepath.Join(t.TempDir(), "prefixes"), Limit: 1 << 30}
			keep(t, p, base, "tok", prefix)
			entry := p.path(base, "tok", prefix)
			c.spoil(t, p, entry)
			n, err := restore(p, base, "tok", prefix)
			if n != 0 || err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "removed") {
				t.Fatalf("%d restored, error %v; want none, and an error saying %q and removed", n, err, c.want)
			}
			if _, err := os.Lstat(entry); err == nil {
				t.Error("the entry was left in place")
			}
			keep(t, p, base, "tok", prefix)
			if n, err := restore(p, base, "tok", prefix); n != len(prefix) || err != nil {
				t.Errorf("the entry written again: %d restored, %v", n, err)
			}
		})
	}
}

// TestPrefixFolder: a folder of the user's that others may enter is
// narrowed to 0700 and used; one of another user's is not used at all,
// said once, and nothing in it is touched.
func TestPrefixFolder(t *testing.T) {
	m := loadModel(t, golden.ModelDir("tiny-f32"))
	prefix := prefixOf(10, MinPrefix)
	p := &Prefixes{Dir: filepath.Join(t.TempDir(), "prefixes"), Limit: 1 << 30}
	keep(t, p, m, "tok", prefix)
	os.Chmod(p.Dir, 0o777)
	if n, err := restore(p, m, "tok", prefix); n != len(prefix) || err != nil {
		t.Errorf("a 0777 folder of the user's: %d restored, %v", n, err)
	}
	if fi, _ := os.Stat(p.Dir); fi.Mode().Perm() != 0o700 {
		t.Errorf("folder mode %v, want narrowed to 0700", fi.Mode().Perm())
	}

	t.Run("another user's folder", func(t *testing.T) {
		asRoot(t)
		os.Chown(p.Dir, 4242, 4242)
		os.Chmod(p.Dir, 0o777)
		fresh := &Prefixes{Dir: p.Dir, Limit: 1 << 30}
		n, err := restore(fresh, m, "tok", prefix)
		if n != 0 || err == nil || !strings.Contains(err.Error(), "prefix cache not used") || !strings.Contains(err.Error(), "belongs to uid 4242") {
			t.Errorf("%d restored, error %v", n, err)
		}
		if n, err := restore(fresh, m, "tok", prefix); n != 0 || err != nil {
			t.Errorf("asked again: %d restored, error %v; want a quiet miss", n, err)
		}
		_, kv := sample(MinPrefix, 30)
		seq := &engine.Sequence{Tokens: prefixOf(30, MinPrefix), Cache: &memCache{kv: kv}}
		if err := fresh.Keep(seq, m, "tok", seq.Tokens); err != nil {
			t.Errorf("keep: %v", err)
		}
		if files, _ := os.ReadDir(p.Dir); len(files) != 1 {
			t.Errorf("%d files in another user's folder, want the one that was there", len(files))
		}
	})
}
