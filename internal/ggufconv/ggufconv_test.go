package ggufconv

import (
	"bufio"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/driftwoodlabs/driftwood/chatopen"
	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/chat"
	"github.com/driftwoodlabs/driftwood/engine/cpu"
	"github.com/driftwoodlabs/driftwood/engine/gguf"
	"github.com/driftwoodlabs/driftwood/internal/golden"
)

// sameLogits bounds the difference between the folder's logits and the
// GGUF file's: the same weights in f32 arithmetic, summed in other
// orders (affine kernels factor the bias out of each group).
const sameLogits = 1e-4

// floatKernels makes the CPU backend multiply quantised weights in
// float for the rest of t, as the GGUF file's blocks always are: the
// int8 kernels would round the folder's activations and not the file's.
// The backends it opens read DRIFTWOOD_KERNELS.
func floatKernels(t *testing.T) { t.Setenv("DRIFTWOOD_KERNELS", "float") }

// convert converts the GGUF file from into a new folder.
func convert(t testing.TB, from string) (string, *Summary) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "model")
	s, err := Convert(from, out)
	if err != nil {
		t.Fatal(err)
	}
	return out, s
}

// open opens a model as the app does, on the CPU backend with an f32 KV
// cache: the comparisons are of the weights' conversion, which a 16-bit
// cache's rounding would blur.
func open(t testing.TB, name string) *chatopen.Loaded {
	t.Helper()
	l, err := chatopen.Open(context.Background(), name, chatopen.Options{Threads: 2,
		NewBackend: func(m *engine.Model) (engine.Backend, error) {
			return cpu.New(m, cpu.Options{Threads: 2, KVType: engine.KVF32})
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

// logits runs ids through l from an empty cache: the logits of every
// position.
func logits(t testing.TB, l *chatopen.Loaded, ids []int32) []float32 {
	t.Helper()
	c, err := l.Backend.NewCache(len(ids))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	out := make([]float32, len(ids)*l.Weights.Config.VocabSize)
	if err := l.Backend.Forward(c, ids, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestConvertTestFiles converts the GGUF test files, which hold every
// type Driftwood reads between them, and checks that the folder is the
// same model: each tensor in the form its type allows, the same logits on
// the golden prompt (within sameLogits of the file's, and within the
// golden tolerance of the float64 reference), the same rotary
// frequencies with no q/k reordering left to the backend, and the same
// ids from the tokenizer and the chat template.
func TestConvertTestFiles(t *testing.T) {
	floatKernels(t)
	for _, c := range []struct {
		name   string
		bits   int
		forms  map[gguf.Type]Form
		reason string
	}{
		{"tiny-mixed.gguf", 4, map[gguf.Type]Form{gguf.F32: Kept, gguf.F16: Kept, gguf.BF16: Kept, gguf.Q4_0: Affine, gguf.Q4_1: Affine, gguf.Q8_0: Dequantised},
			"Q4_0 and Q4_1 hold more weights than Q8_0, which the one 4-bit quantisation leaves as floats"},
		{"tiny-kquants.gguf", 4, map[gguf.Type]Form{gguf.F32: Kept, gguf.Q4_K: Affine, gguf.Q5_K: Dequantised, gguf.Q6_K: Dequantised, gguf.Q8_0: Dequantised},
			"Q4_K (sub-blocks of 32, one step each) holds more weights than Q8_0; Q5_K is 5-bit, and Q6_K's steps cover 16 weights, smaller than MLX's groups"},
	} {
		t.Run(c.name, func(t *testing.T) {
			from := golden.ModelDir(c.name)
			dir, s := convert(t, from)
			if s.Bits != c.bits {
				t.Errorf("%d-bit folder, want %d: %s", s.Bits, c.bits, c.reason)
			}
			seen := map[gguf.Type]bool{}
			for _, w := range s.Tensors {
				seen[w.Type] = true
				if want := c.forms[w.Type]; w.Form != want {
					t.Errorf("%s (%s) → %s written %s, want %s: %s", w.From, w.Type, w.To, w.Form, want, c.reason)
				}
			}
			if len(seen) != len(c.forms) {
				t.Errorf("the file holds types %v, the test expects %v", seen, c.forms)
			}

			file, folder := open(t, from), open(t, dir)
			checkConfig(t, file.Weights, folder.Weights, s)
			g, err := golden.Load(c.name)
			if err != nil {
				t.Fatal(err)
			}
			want, got := logits(t, file, g.Prompt.IDs), logits(t, folder, g.Prompt.IDs)
			d := golden.MaxDiff(got, want)
			if d > sameLogits {
				t.Errorf("prompt logits: the folder's differ from the file's by %.2g", d)
			}
			t.Logf("%d-bit folder, %d bytes; prompt logits within %.2g of the file's", s.Bits, s.Bytes, d)
			vocab := folder.Weights.Config.VocabSize
			for p := range g.Prompt.IDs {
				if d := golden.MaxDiff(got[p*vocab:(p+1)*vocab], g.PromptLogits[p]); d > golden.Float.Logit {
					t.Errorf("position %d: the folder's logits differ from the reference by %.2g", p, d)
				}
			}
			checkText(t, file, folder)
		})
	}
}

// checkConfig checks that the folder's model has the file's
// hyper-parameters and frequencies, its rows in Hugging Face's order,
// and its affine tensors quantised as the summary says.
func checkConfig(t *testing.T, file, folder *engine.Model, s *Summary) {
	t.Helper()
	a, b := *file.Config, *folder.Config
	if b.PermutedQK || b.RopeFactors != nil {
		t.Errorf("the folder's config has PermutedQK %v, rope factors %v; want Hugging Face's order and rope_scaling", b.PermutedQK, b.RopeFactors)
	}
	fa, fb := a.InvFreq(), b.InvFreq()
	for i := range fa {
		if math.Abs(fa[i]-fb[i]) > ropeTol*fa[i] {
			t.Errorf("rotary frequency %d: %g in the folder, %g in the file", i, fb[i], fa[i])
		}
	}
	if b.Quantization == nil || b.Quantization.Bits != s.Bits || b.Quantization.GroupSize != 32 {
		t.Errorf("the folder's quantization %+v, want %d bits in groups of 32", b.Quantization, s.Bits)
	}
	for _, cfg := range []*engine.Config{&a, &b} {
		cfg.PermutedQK, cfg.RopeFactors, cfg.RopeScaling, cfg.Quantization, cfg.TieWordEmbeddings = false, nil, nil, nil, nil
		cfg.RMSNormEps = float64(float32(cfg.RMSNormEps)) // as the backends use it
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Errorf("hyper-parameters differ:\nfile   %s\nfolder %s", ja, jb)
	}
	if got, want := folder.Config.Tied(true), file.Weights.LMHead.Name == file.Weights.EmbedTokens.Name; got != want {
		t.Errorf("the folder's output layer tied %v, the file's %v", got, want)
	}
	quantised := map[string]bool{}
	for _, w := range s.Tensors {
		quantised[w.To] = w.Form == Affine
	}
	for _, tn := range folderTensors(folder) {
		if want := quantised[tn.Name]; tn.Quantized() != want || want && (tn.Bits != s.Bits || tn.GroupSize != 32) {
			t.Errorf("%s: quantised %v (%d bits, groups of %d); the summary says %v", tn.Name, tn.Quantized(), tn.Bits, tn.GroupSize, want)
		}
	}
}

// folderTensors lists a model's weights.
func folderTensors(m *engine.Model) []*engine.Tensor {
	w := &m.Weights
	ts := []*engine.Tensor{&w.EmbedTokens, &w.Norm, &w.LMHead}
	for i := range w.Layers {
		l := &w.Layers[i]
		ts = append(ts, &l.InputLayernorm, &l.QProj, &l.KProj, &l.VProj, &l.OProj, &l.PostAttentionLayernorm, &l.GateProj, &l.UpProj, &l.DownProj)
	}
	return ts
}

// checkText checks that the folder's tokenizer and chat template give the
// file's ids: the tiny tokenizer's golden texts, plain and with special
// tokens, and a chat rendered and encoded.
func checkText(t *testing.T, file, folder *chatopen.Loaded) {
	t.Helper()
	f, err := os.Open(filepath.Join(golden.Dir(), "..", "tiny-tokenizer", "tokenize.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	texts := []string{"<|begin_of_text|>Hello<|eot_id|> world"}
	for sc := bufio.NewScanner(f); sc.Scan(); {
		var row struct{ Text string }
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatal(err)
		}
		texts = append(texts, row.Text)
	}
	for _, text := range texts {
		a, b := file.Tok, folder.Tok
		if !slices.Equal(a.Encode(text), b.Encode(text)) || !slices.Equal(a.EncodeWithSpecial(text), b.EncodeWithSpecial(text)) ||
			!slices.Equal(a.AddSpecialTokens(a.Encode(text)), b.AddSpecialTokens(b.Encode(text))) {
			t.Errorf("%q: the folder's tokenizer gives %v, the file's %v", text, b.EncodeWithSpecial(text), a.EncodeWithSpecial(text))
		}
	}
	if file.Template == nil || folder.Template == nil {
		t.Fatalf("chat templates: file %v, folder %v; want both", file.Template != nil, folder.Template != nil)
	}
	msgs := []chat.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hello world!"}, {Role: "assistant", Content: "Hi."}, {Role: "user", Content: "What is the capital of France?"}}
	opt := chat.Options{AddGenerationPrompt: true}
	want, err := file.Template.Encode(file.Tok, msgs, opt)
	if err != nil {
		t.Fatal(err)
	}
	got, err := folder.Template.Encode(folder.Tok, msgs, opt)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) || len(want) < 20 {
		t.Errorf("a chat: the folder gives %v, the file %v", got, want)
	}
}

// TestConvertRefuses: what cannot be converted exactly, or written
// safely, is refused with an error naming it, and nothing is left at out.
func TestConvertRefuses(t *testing.T) {
	tiny := golden.ModelDir("tiny-mixed.gguf")
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "config.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		reason, from, out, want string
	}{
		{"a folder in use is not written over", tiny, full, "is a folder that is not empty"},
		{"a model folder is not a GGUF file", golden.ModelDir("tiny-f32"), "", "is not a GGUF file"},
		{"a tensor the model does not bind has no place in the folder",
			rewrite(t, tiny, func(ts []gguf.WriteTensor) []gguf.WriteTensor {
				return append(ts, gguf.WriteTensor{Name: "blk.0.extra.weight", Type: gguf.F32, Dims: []int{2}, Data: make([]byte, 8)})
			}), "", "tensor blk.0.extra.weight is not one of the model's weights"},
		{"rope factors that no llama3 scaling gives are not written as something else",
			rewrite(t, tiny, func(ts []gguf.WriteTensor) []gguf.WriteTensor {
				for i := range ts {
					if ts[i].Name == "rope_freqs.weight" {
						ts[i].Data = f32Bytes([]float32{1, 4, 2, 8, 1, 1, 32, 1})
					}
				}
				return ts
			}), "", "rope_freqs.weight: its factors (1 to 32) are not those of any llama3 rope scaling"},
	} {
		out := c.out
		if out == "" {
			out = filepath.Join(t.TempDir(), "model")
		}
		_, err := Convert(c.from, out)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.reason, err, c.want)
		}
		entries, _ := os.ReadDir(filepath.Dir(out))
		if c.out == "" && len(entries) > 0 {
			t.Errorf("%s: left %s behind", c.reason, entries[0].Name())
		}
	}
}

// rewrite writes a copy of the GGUF file from with its tensors changed by
// edit, and returns its path.
func rewrite(t *testing.T, from string, edit func([]gguf.WriteTensor) []gguf.WriteTensor) string {
	t.Helper()
	f, err := gguf.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var meta []gguf.KV
	for k, v := range f.Meta.All() {
		meta = append(meta, gguf.KV{Key: k, Value: v})
	}
	var ts []gguf.WriteTensor
	for _, tn := range f.Tensors {
		ts = append(ts, gguf.WriteTensor{Name: tn.Name, Type: tn.Type, Dims: tn.Dims, Data: slices.Clone(tn.Data)})
	}
	path := filepath.Join(t.TempDir(), filepath.Base(from))
	w, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := gguf.Write(w, meta, edit(ts)); err != nil {
		t.Fatal(err)
	}
	return path
}
