package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/driftwoodlabs/driftwood/hub"
)

// hubEnvHelp is the environment that the model commands read, shown in
// their usage with the cache folder they use now.
func hubEnvHelp() string {
	return `environment (as huggingface_hub reads it):
  HF_HUB_CACHE    the cache folder (else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub,
                  else ~/.cache/huggingface/hub); here: ` + hub.DefaultCacheDir() + `
  HF_ENDPOINT     the hub (default https://huggingface.co)
  HF_TOKEN        token for gated and private repos
  HF_HUB_OFFLINE  1: never use the network
  OLLAMA_MODELS   ollama's store, read in place (default ~/.ollama/models); here: ` + hub.DefaultOllamaDir() + `
  LMSTUDIO_MODELS LM Studio's models folder, read in place (default ~/.lmstudio/models); here: ` + hub.DefaultLMStudioDir()
}

// newHubFlags makes a flag set for a model command with its usage line.
func newHubFlags(name, usage string, errOut io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.Usage = func() {
		fmt.Fprintln(errOut, "usage: driftwood "+usage)
		fs.PrintDefaults()
		fmt.Fprintln(errOut, hubEnvHelp())
	}
	return fs
}

// cmdPull implements "driftwood pull REPO[@REVISION][:QUANT|:FILE.gguf]":
// it downloads what inference needs from the Hugging Face hub into the
// cache (a model folder, or one GGUF file of a GGUF repo), with progress
// on errOut, and prints the folder or file.
func cmdPull(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := newHubFlags("pull", "pull REPO[@REVISION][:QUANT|:FILE.gguf]\n"+
		"  e.g. mlx-community/Llama-3.2-1B-Instruct-4bit, bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M", errOut)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errors.New("want one repo id")
	}
	opt := hub.OptionsFromEnv()
	opt.Progress = errOut
	path, err := hub.Pull(ctx, fs.Arg(0), opt)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, path)
	return nil
}

// cmdModels implements "driftwood models [--json]": the models on this
// machine (the Hugging Face cache, ollama's store, LM Studio's folder)
// with the name --model takes, size, format and whether Driftwood runs
// them.
func cmdModels(_ context.Context, args []string, out, errOut io.Writer) error {
	fs := newHubFlags("models", "models [--json]", errOut)
	asJSON := fs.Bool("json", false, "print a JSON array instead of a table")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	opt := hub.OptionsFromEnv()
	models, err := hub.Models(opt)
	if err != nil && len(models) == 0 {
		return err
	}
	if err != nil {
		fmt.Fprintln(errOut, "driftwood models:", err)
	}
	if *asJSON {
		if models == nil {
			models = []hub.Model{}
		}
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(models)
	}
	if len(models) == 0 {
		fmt.Fprintf(out, "no models in the Hugging Face cache (%s), ollama's store (%s) or LM Studio's folder (%s); "+
			"get one with \"driftwood pull REPO\" or \"driftwood pull REPO:QUANT\"\n", opt.CacheDir, hub.DefaultOllamaDir(), hub.DefaultLMStudioDir())
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSIZE\tFORMAT\tRUNS")
	for _, m := range models {
		format := m.Format
		if format == "" {
			format = "?"
		}
		runs := "yes"
		if !m.Runs {
			runs = "no: " + m.Problem
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", m.Name, hub.FormatSize(m.Size), format, runs)
	}
	return tw.Flush()
}

// cmdRm implements "driftwood rm REPO...": it deletes the repos from the
// cache, every revision and blob of each. Other apps' stores are theirs
// to change.
func cmdRm(_ context.Context, args []string, out, errOut io.Writer) error {
	fs := newHubFlags("rm", "rm REPO...", errOut)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return errors.New("want at least one repo id")
	}
	opt := hub.OptionsFromEnv()
	for _, repo := range fs.Args() {
		if err := hub.Remove(repo, opt); err != nil {
			return err
		}
		fmt.Fprintln(out, "removed", repo)
	}
	return nil
}
