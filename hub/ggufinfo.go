package hub

import (
	"fmt"
	"os"
	"strings"
	"unicode"

	"github.com/driftwoodlabs/driftwood/engine/gguf"
)

// ggufArchitectures are the general.architecture values Driftwood runs:
// the engine's list (engine/gguf.go), which TestGGUFArchitecturesAreTheEngines
// holds this one to.
var ggufArchitectures = map[string]bool{"llama": true, "qwen2": true, "qwen3": true}

// ftypeNames are llama.cpp's names for general.file_type, the llama_ftype
// a file was quantised to (llama.h; 4 to 6 and 33 to 35 are no longer
// written).
var ftypeNames = map[uint64]string{
	0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 4: "Q4_1_SOME_F16", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1",
	10: "Q2_K", 11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S",
	17: "Q5_K_M", 18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S", 22: "IQ3_XS", 23: "IQ3_XXS",
	24: "IQ1_S", 25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M", 28: "IQ2_S", 29: "IQ2_M", 30: "IQ4_XS",
	31: "IQ1_M", 32: "BF16", 33: "Q4_0_4_4", 34: "Q4_0_4_8", 35: "Q4_0_8_8", 36: "TQ1_0", 37: "TQ2_0",
	38: "MXFP4_MOE", 39: "NVFP4", 40: "Q1_0",
}

// describeGGUFModel fills m's size, format, summary and whether it runs
// from the GGUF file m.Path, by its header alone: the architecture, the
// tensors' types and general.file_type. A problem m already has is kept
// (it runs then in no case).
func describeGGUFModel(m *Model) {
	if st, err := os.Stat(m.Path); err == nil {
		m.Size = st.Size()
	}
	f, err := gguf.Open(m.Path)
	if err != nil {
		if m.Problem == "" {
			m.Problem = err.Error()
		}
		return
	}
	defer f.Close()
	m.Format = ggufQuant(f)
	arch, _ := f.Meta.String("general.architecture")
	m.Summary = printable(arch)
	layers, lerr := f.Meta.Uint(arch + ".block_count")
	hidden, herr := f.Meta.Uint(arch + ".embedding_length")
	if lerr == nil && herr == nil {
		m.Summary = fmt.Sprintf("%s %d layers, hidden %d", printable(arch), layers, hidden)
	}
	if name, err := f.Meta.String("general.name"); err == nil && name != "" {
		m.Summary += " (" + printable(name) + ")"
	}
	if m.Problem != "" {
		return
	}
	if !ggufArchitectures[arch] {
		m.Problem = fmt.Sprintf("general.architecture %q is not supported (Driftwood runs llama, qwen2 and qwen3 GGUF files)", arch)
		return
	}
	for _, t := range f.Tensors {
		if err := t.CheckSupported(); err != nil {
			m.Problem = err.Error()
			return
		}
	}
	m.Runs = true
}

// printable is a string from a file's metadata made fit for a terminal:
// valid UTF-8 without control characters, at most 80 runes.
func printable(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, strings.ToValidUTF8(s, "?"))
	if r := []rune(s); len(r) > 80 {
		s = string(r[:79]) + "…"
	}
	return s
}

// ggufQuant names a GGUF file's quantisation: llama.cpp's name for its
// general.file_type, else the type that holds most of its weight bytes.
func ggufQuant(f *gguf.File) string {
	if v, err := f.Meta.Uint("general.file_type"); err == nil {
		if name, ok := ftypeNames[v]; ok {
			return name
		}
	}
	bytes := map[gguf.Type]int{}
	best := gguf.Type(0)
	for _, t := range f.Tensors {
		bytes[t.Type] += len(t.Data)
		if bytes[t.Type] > bytes[best] {
			best = t.Type
		}
	}
	if len(bytes) == 0 {
		return ""
	}
	return best.String()
}
