package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const tinyModel = "../../testdata/models/tiny-f32"

func runTokenize(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := cmdTokenize(context.Background(), args, &out, &errOut)
	return out.String(), errOut.String(), err
}

func TestTokenizeIDs(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		// Golden ids of the tiny tokenizer (testdata/tiny-tokenizer/tokenize.jsonl).
		{[]string{"--model", tinyModel, "Hello world!"}, "39 68 274 78 494 0\n"},
		{[]string{"--model", tinyModel, "Hello", "world!"}, "39 68 274 78 494 0\n"},
		{[]string{"--model", tinyModel, "--special", "<|begin_of_text|>Hello<|eot_id|>"}, "500 39 68 274 78 509\n"},
		{[]string{"--model", tinyModel, "<|begin_of_text|>Hello<|eot_id|>"},
			"27 91 65 68 70 276 62 78 69 62 83 68 87 83 91 29 39 68 274 78 27 91 68 293 62 305 91 29\n"},
		{[]string{"--model", tinyModel + "/tokenizer.json", "Hello world!"}, "39 68 274 78 494 0\n"},
		{[]string{"--model", tinyModel, ""}, "\n"},
	}
	for _, c := range cases {
		out, errOut, err := runTokenize(t, c.args...)
		if err != nil || out != c.want || errOut != "" {
			t.Errorf("%q: out %q, stderr %q, err %v; want %q", c.args, out, errOut, err, c.want)
		}
	}
}

// TestTokenizeSentencePiece: a folder holding only the Mistral
// tokenizer.json is enough, and golden rows of
// testdata/mistral-tokenizer/tokenize.jsonl come out.
func TestTokenizeSentencePiece(t *testing.T) {
	zr, err := gzip.NewReader(bytes.NewReader(mustRead(t, "../../testdata/mistral-tokenizer/tokenizer.json.gz")))
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--model", dir, "--special", "Hello <s> world</s>"}, "22557 28705 1 28705 1526 2\n"},
		{[]string{"--model", dir, "Hello <s> world</s>"}, "22557 523 28713 28767 1526 700 28713 28767\n"},
		{[]string{"--model", dir, "--special", "--add-special-tokens", "Hello"}, "1 22557\n"},
	}
	for _, c := range cases {
		out, errOut, err := runTokenize(t, c.args...)
		if err != nil || out != c.want || errOut != "" {
			t.Errorf("%q: out %q, stderr %q, err %v; want %q", c.args, out, errOut, err, c.want)
		}
	}
	out, _, err := runTokenize(t, "--model", dir, "--special", "--json", "▁<0x41>\n")
	if err != nil {
		t.Fatal(err)
	}
	var toks []struct {
		ID    int32  `json:"id"`
		Bytes string `json:"bytes"`
	}
	if err := json.Unmarshal([]byte(out), &toks); err != nil {
		t.Fatal(err)
	}
	// "▁" is a space and <0x0A> the newline byte: the token's bytes.
	if n := len(toks); n < 2 || toks[0].Bytes != "20" || toks[n-1].ID != 13 || toks[n-1].Bytes != "0a" {
		t.Errorf("tokens %+v: want the first the bytes of \"▁\" and the last <0x0A> (13)", toks)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestTokenizeJSON(t *testing.T) {
	out, _, err := runTokenize(t, "--model", tinyModel, "--json", "--special", "Hi<|eot_id|> é")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "[\n{") || !strings.HasSuffix(out, "}\n]\n") || !strings.Contains(out, `"text":"<|eot_id|>"`) {
		t.Errorf("layout: %s", out)
	}
	var toks []struct {
		ID    int32  `json:"id"`
		Text  string `json:"text"`
		Bytes string `json:"bytes"`
	}
	if err := json.Unmarshal([]byte(out), &toks); err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	var hexes []string
	for _, tok := range toks {
		text.WriteString(tok.Text)
		hexes = append(hexes, tok.Bytes)
	}
	// The tiny vocabulary has no "é": its two bytes are separate tokens,
	// each shown as U+FFFD in "text" and exactly in "bytes".
	if got, want := strings.Join(hexes, " "), "48 69 3c7c656f745f69647c3e 20 c3 a9"; got != want {
		t.Errorf("bytes %s, want %s", got, want)
	}
	if got, want := text.String(), "Hi<|eot_id|> \uFFFD\uFFFD"; got != want {
		t.Errorf("text %q, want %q", got, want)
	}
	out, _, err = runTokenize(t, "--model", tinyModel, "--json", "")
	if err != nil || out != "[]\n" {
		t.Errorf("empty text: %q, %v", out, err)
	}
}

func TestTokenizeErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"Hello"}, "--model is required"},
		{[]string{"--model", tinyModel}, "no text to tokenize"},
		{[]string{"--model", "no-such-folder", "x"}, "no-such-folder"},
		{[]string{"--bogus", "x"}, "flag provided but not defined: -bogus"},
	}
	for _, c := range cases {
		_, errOut, err := runTokenize(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err %v, want %q", c.args, err, c.want)
		}
		if c.args[0] != "--model" && !strings.Contains(errOut, "usage: driftwood tokenize") {
			t.Errorf("%q: no usage on stderr: %q", c.args, errOut)
		}
	}
	if _, errOut, err := runTokenize(t, "-h"); !errors.Is(err, flag.ErrHelp) || !strings.Contains(errOut, "-special") {
		t.Errorf("-h: %v, %q", err, errOut)
	}
}

// TestTokenizeGGUF: a GGUF file's tokenizer, from its metadata (here the
// tokenizer-only file of SmolLM2's, in the tokenizer's test data), with
// the ids llama.cpp gives for the text.
func TestTokenizeGGUF(t *testing.T) {
	src, err := os.Open("../../engine/tokenizer/testdata/gguf/smollm2.gguf.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	z, err := gzip.NewReader(src)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "smollm2.gguf")
	data, err := io.ReadAll(z)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(t, "tokenize", "--model", path, "Hello world, 12345!")
	if want := "19556 905 28 216 33 34 35 36 37 17\n"; code != 0 || out != want {
		t.Errorf("exit %d, %q (%s); want llama.cpp's %q", code, out, errOut, want)
	}
}
