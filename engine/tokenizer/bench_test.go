package tokenizer

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var benchWords = strings.Fields(`the of and to in is was that for it as with be on
not he by are this which at from have or an they one had were her all there been
their has will would more when if no out so said what up its about into than them
can only other new some could time these two may then do first any my now such like
our over man me even most made after also did many before must through back years
where much your way well down should because each just those people how too little
state good very make world still own see men work long get here between both life
being under never day same another know while last might us great old year off come
since against go came right used take three himself few house use during without
again place around however home small found thought went say part once general high
upon school every don't does got united left number course war until always away
something fact though water less public put think almost hand enough far took head
yet government system better set told nothing night end why called didn't eyes find
going look asked later knew point next program city business give group toward young
let room president side social given present several order national possible rather
second face per among form important often things looked early white case john
become large big need four within felt along children saw best church ever least
power development light thought family interest want members mind country area
others done turned although open God service certain kind problem began different
door thus help means sense whole matter perhaps itself York times law human line
above name example action company hands local show whether five history gave today
either act feet across taken past quite anything seen having death week experience`)

var benchCode = []string{
	"func (s *Server) handle%d(w http.ResponseWriter, r *http.Request) {\n\tif err := s.check(r); err != nil {\n\t\thttp.Error(w, err.Error(), 500)\n\t\treturn\n\t}\n\tfmt.Fprintf(w, \"ok %%d\\n\", %d)\n}\n",
	"def compute_%d(values, scale=%d.5):\n    total = 0\n    for v in values:\n        total += v * scale  # accumulate\n    return {'total': total, 'count': len(values)}\n",
	"for (let i = 0; i < %d; i++) {\n  console.log(`item ${i}: ` + items[i].name); // %d\n}\n",
}

// benchText builds about n bytes of deterministic English prose with
// numbers, punctuation and code blocks.
func benchText(n int) string {
	rng := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	for b.Len() < n {
		if rng.IntN(8) == 0 {
			b.WriteString("```\n")
			fmt.Fprintf(&b, benchCode[rng.IntN(len(benchCode))], rng.IntN(1000), rng.IntN(100))
			b.WriteString("```\n\n")
			continue
		}
		for s := rng.IntN(5) + 2; s > 0; s-- {
			words := rng.IntN(15) + 4
			for w := 0; w < words; w++ {
				word := benchWords[rng.IntN(len(benchWords))]
				switch {
				case w == 0:
					word = strings.ToUpper(word[:1]) + word[1:]
				case rng.IntN(25) == 0:
					word = fmt.Sprint(rng.IntN(100000))
				}
				if w > 0 {
					b.WriteByte(' ')
				}
				b.WriteString(word)
				if w < words-1 && rng.IntN(12) == 0 {
					b.WriteByte(',')
				}
			}
			b.WriteString([]string{". ", ". ", "? ", "! "}[rng.IntN(4)])
		}
		b.WriteString("\n\n")
	}
	return b.String()
}

// BenchmarkEncode encodes 1 MB of English and code with the Llama 3
// tokenizer; it reports MB/s and tokens/s.
func BenchmarkEncode(b *testing.B) { benchEncode(b, llama3(b)) }

// BenchmarkEncodeMistral is BenchmarkEncode with the SentencePiece-style
// Mistral tokenizer.
func BenchmarkEncodeMistral(b *testing.B) { benchEncode(b, mistral(b)) }

// BenchmarkEncodeQwen3 is BenchmarkEncode with the Qwen3 tokenizer.
func BenchmarkEncodeQwen3(b *testing.B) { benchEncode(b, qwen3(b)) }

func benchEncode(b *testing.B, tok *Tokenizer) {
	text := benchText(1 << 20)
	b.SetBytes(int64(len(text)))
	tokens := 0
	b.ResetTimer()
	for b.Loop() {
		tokens += len(tok.Encode(text))
	}
	b.ReportMetric(float64(tokens)/b.Elapsed().Seconds(), "tokens/s")
}

// BenchmarkLoad measures loading the gzipped 9 MB Llama 3 tokenizer.json
// (ns/op is the load time).
func BenchmarkLoad(b *testing.B) {
	for b.Loop() {
		if _, err := Load(llama3Path); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadCached is BenchmarkLoad from a warm tokenizer cache
// (LoadCached): the file is still read and hashed, the JSON is not.
func BenchmarkLoadCached(b *testing.B) {
	dir := b.TempDir()
	if _, _, err := LoadCached(llama3Path, dir); err != nil {
		b.Fatal(err)
	}
	for range 500 {
		if m, _ := filepath.Glob(filepath.Join(dir, "*.bin")); len(m) == 1 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	for b.Loop() {
		if _, _, err := LoadCached(llama3Path, dir); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFromGGUF measures building the Llama 3 tokenizer from GGUF
// metadata already read (ns/op is the build time, fingerprint included).
func BenchmarkFromGGUF(b *testing.B) {
	v := ggufVocab(b, "llama3")
	for b.Loop() {
		if _, err := FromGGUF(v, "llama3.gguf"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFromGGUFCached is BenchmarkFromGGUF from a cache entry.
func BenchmarkFromGGUFCached(b *testing.B) {
	v := ggufVocab(b, "llama3")
	dir := b.TempDir()
	if _, _, err := FromGGUFCached(v, "llama3.gguf", dir); err != nil {
		b.Fatal(err)
	}
	awaitEntry(dir) // the entry is written in the background
	for b.Loop() {
		if _, _, err := FromGGUFCached(v, "llama3.gguf", dir); err != nil {
			b.Fatal(err)
		}
	}
}
