package main

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/driftwoodlabs/driftwood/internal/synthmodel"
)

// cmdDev holds developer tools.
func cmdDev(ctx context.Context, args []string, out, errOut io.Writer) error {
	const usage = "usage: driftwood dev gen-model --shape SHAPE --dtype DTYPE --out DIR\n       driftwood dev gguf-to-mlx --from FILE.gguf --out DIR"
	if len(args) > 0 && asksHelp(args[:1]) {
		fmt.Fprintln(errOut, usage)
		return flag.ErrHelp
	}
	if len(args) == 0 {
		return errors.New(usage)
	}
	switch args[0] {
	case "gen-model":
		return cmdGenModel(args[1:], out, errOut)
	case "gguf-to-mlx":
		return cmdGGUFToMLX(args[1:], out, errOut)
	}
	return errors.New(usage)
}

func cmdGenModel(args []string, out, errOut io.Writer) error {
	fs := flag.NewFlagSet("driftwood dev gen-model", flag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.Usage = func() {
		fmt.Fprintln(errOut, "usage: driftwood dev gen-model [flags]")
		fs.PrintDefaults()
	}
	var shapes []string
	for s := range synthmodel.Shapes {
		shapes = append(shapes, s)
	}
	sort.Strings(shapes)
	shape := fs.String("shape", "llama-3.2-1b", "model shape: "+strings.Join(shapes, ", "))
	dtype := fs.String("dtype", "q4", "weights: "+strings.Join(synthmodel.Dtypes, ", "))
	group := fs.Int("group-size", 64, "quantisation group size for q4/q8")
	seed := fs.Uint64("seed", 1, "random seed")
	dir := fs.String("out", "", "output folder (required)")
	tokDir := fs.String("tokenizer", filepath.Join("testdata", "llama3-tokenizer"), "folder with the Llama 3 tokenizer test data, or a folder with tokenizer.json and tokenizer_config.json to copy (testdata/tiny-tokenizer for tiny-256)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	s, ok := synthmodel.Shapes[*shape]
	if !ok {
		return fmt.Errorf("--shape %q: want one of %s", *shape, strings.Join(shapes, ", "))
	}
	if *dir == "" {
		return errors.New("--out DIR is required")
	}
	fmt.Fprintf(errOut, "writing a %s %s model with random weights to %s ...\n", *shape, *dtype, *dir)
	if err := synthmodel.Write(*dir, synthmodel.Options{Shape: s, Dtype: *dtype, Seed: *seed, GroupSize: *group}); err != nil {
		return err
	}
	if err := writeTokenizer(*tokDir, *dir); err != nil {
		return err
	}
	fmt.Fprintf(out, "%s\n", *dir)
	return nil
}

// writeTokenizer copies src's tokenizer.json and tokenizer_config.json
// into dir, or, from the Llama 3 tokenizer test data, writes the real
// Llama 3 tokenizer.json and a tokenizer_config.json with Llama 3.2's
// chat template.
func writeTokenizer(src, dir string) error {
	if _, err := os.Stat(filepath.Join(src, "tokenizer.json")); err == nil {
		for _, name := range []string{"tokenizer.json", "tokenizer_config.json"} {
			b, err := os.ReadFile(filepath.Join(src, name))
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				return err
			}
		}
		return nil
	}
	tok, err := readGz(filepath.Join(src, "tokenizer.json.gz"))
	if err != nil {
		return fmt.Errorf("%w (run from the repository root, or give --tokenizer)", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), tok, 0o644); err != nil {
		return err
	}
	cfgData, err := readGz(filepath.Join(src, "tokenizer_config.llama3_1.json.gz"))
	if err != nil {
		return err
	}
	tmpl, err := os.ReadFile(filepath.Join(src, "chat_template.meta_llama3_2.jinja"))
	if err != nil {
		return err
	}
	var cfg map[string]any
	if err := json.Unmarshal(cfgData, &cfg); err != nil {
		return err
	}
	cfg["chat_template"] = string(tmpl)
	cfg["eos_token"] = "<|eot_id|>"
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), b, 0o644)
}

func readGz(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return io.ReadAll(z)
}
