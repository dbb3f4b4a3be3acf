package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/driftwoodlabs/driftwood/internal/ggufconv"
)

// cmdGGUFToMLX converts a GGUF model file into an MLX model folder with
// the same weights (internal/ggufconv), and says what became of each
// type of tensor.
func cmdGGUFToMLX(args []string, out, errOut io.Writer) error {
	fs := flag.NewFlagSet("driftwood dev gguf-to-mlx", flag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.Usage = func() {
		fmt.Fprintln(errOut, "usage: driftwood dev gguf-to-mlx --from FILE.gguf --out DIR\n\n"+
			"Writes an MLX model folder with the GGUF file's weights: Q4_0, Q4_1 and Q4_K\n"+
			"blocks as affine 4-bit groups of 32, Q8_0 as 8-bit (the same values). The\n"+
			"folder has one bit width, that of most of the weights; the blocks of the other,\n"+
			"Q5_K and Q6_K become float32 (their exact values). Floats are kept; query and\n"+
			"key rows go back to Hugging Face's order.")
		fs.PrintDefaults()
	}
	from := fs.String("from", "", "GGUF model file to convert (required)")
	dir := fs.String("out", "", "folder to write; must not exist or be empty (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *from == "" || *dir == "" || fs.NArg() > 0 {
		return errors.New("--from FILE.gguf and --out DIR are required, and nothing else")
	}
	fmt.Fprintf(errOut, "converting %s to %s ...\n", *from, *dir)
	s, err := ggufconv.Convert(*from, *dir)
	if err != nil {
		return err
	}
	type kind struct {
		from string
		form ggufconv.Form
	}
	count := map[kind]int{}
	var order []kind
	for _, w := range s.Tensors {
		k := kind{w.Type.String(), w.Form}
		if count[k] == 0 {
			order = append(order, k)
		}
		count[k]++
	}
	for _, k := range order {
		fmt.Fprintf(errOut, "  %4d %-5s %s\n", count[k], k.from, describe(k.form, s.Bits))
	}
	fmt.Fprintf(errOut, "wrote %.1f MB\n", float64(s.Bytes)/1e6)
	fmt.Fprintln(out, *dir)
	return nil
}

// describe says what a form is in a folder quantised to bits.
func describe(f ggufconv.Form, bits int) string {
	switch f {
	case ggufconv.Affine:
		return fmt.Sprintf("→ affine %d-bit, groups of 32 (the same codes and values)", bits)
	case ggufconv.Dequantised:
		return "→ F32 (the same values)"
	}
	return "kept"
}
