package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/gguf"
	"github.com/driftwoodlabs/driftwood/engine/tokenizer"
)

// cmdTokenize implements "driftwood tokenize --model DIR [--special]
// [--add-special-tokens] [--json] TEXT...": it prints the token ids of the
// text (the arguments joined by spaces), no BOS added unless asked. DIR
// needs only tokenizer.json, not a model.
func cmdTokenize(_ context.Context, args []string, out, errOut io.Writer) error {
	fs := flag.NewFlagSet("tokenize", flag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.Usage = func() {
		fmt.Fprintln(errOut, "usage: driftwood tokenize --model DIR [--special] [--add-special-tokens] [--json] TEXT...")
		fs.PrintDefaults()
	}
	model := fs.String("model", "", "model folder with tokenizer.json (or the path of a tokenizer.json, or a GGUF file)")
	special := fs.Bool("special", false, "recognise special tokens written in the text, such as <|eot_id|>")
	addSpecial := fs.Bool("add-special-tokens", false, "add the tokens the tokenizer's post-processor adds (the BOS of Llama and Mistral, nothing for Qwen)")
	asJSON := fs.Bool("json", false, `print a JSON array of {"id", "text", "bytes" (hex)} instead of the ids`)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *model == "" {
		fs.Usage()
		return errors.New("--model is required")
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return errors.New("no text to tokenize")
	}
	tok, err := loadTokenizer(*model)
	if err != nil {
		return err
	}
	text := strings.Join(fs.Args(), " ")
	var ids []int32
	if *special {
		ids = tok.EncodeWithSpecial(text)
	} else {
		ids = tok.Encode(text)
	}
	if *addSpecial {
		ids = tok.AddSpecialTokens(ids)
	}
	if *asJSON {
		return writeTokensJSON(out, tok, ids)
	}
	strs := make([]string, len(ids))
	for i, id := range ids {
		strs[i] = strconv.Itoa(int(id))
	}
	_, err = fmt.Fprintln(out, strings.Join(strs, " "))
	return err
}

// tokenJSON is one token of tokenize --json. Text is the token's bytes as
// a string (a partial UTF-8 character shows as U+FFFD); Bytes is exact.
type tokenJSON struct {
	ID    int32  `json:"id"`
	Text  string `json:"text"`
	Bytes string `json:"bytes"`
}

// writeTokensJSON prints a JSON array with one token per line.
func writeTokensJSON(w io.Writer, tok *tokenizer.Tokenizer, ids []int32) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // keep "<|eot_id|>" readable
	b.WriteString("[")
	for i, id := range ids {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("\n")
		raw := tok.TokenBytes(id)
		if err := enc.Encode(tokenJSON{ID: id, Text: string(raw), Bytes: hex.EncodeToString(raw)}); err != nil {
			return err
		}
		b.Truncate(b.Len() - 1) // Encode's newline
	}
	if len(ids) > 0 {
		b.WriteString("\n")
	}
	b.WriteString("]\n")
	_, err := w.Write(b.Bytes())
	return err
}

// loadTokenizer reads the tokenizer of a model folder, a tokenizer.json
// or a GGUF file (its metadata), without loading a model.
func loadTokenizer(path string) (*tokenizer.Tokenizer, error) {
	if engine.IsGGUF(path) {
		f, err := gguf.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return tokenizer.OpenGGUF(f)
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, "tokenizer.json")
	}
	return tokenizer.Load(path)
}
