// Command driftwood is a terminal chat app for Llama-family models that runs
// them locally: pure Go on the CPU, MLX on Apple GPUs.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
)

// command is one sub-command: it parses its own flags from args and writes
// its output to out and diagnostics to errOut.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, out, errOut io.Writer) error
}

func commands() map[string]command {
	return map[string]command{
		"chat":        {"the chat (what driftwood with no command opens)", cmdChat},
		"run":         {"generate a reply to a prompt", cmdRun},
		"rank":        {"run one rank of a model split across processes (started by run --ranks, or by hand with --hostfile)", cmdRank},
		"bench":       {"measure prefill and decode speed", cmdBench},
		"tokenize":    {"print the token ids of a text", cmdTokenize},
		"doctor":      {"check the MLX library and run a one-token smoke test", cmdDoctor},
		"dev":         {"developer tools (dev gen-model, dev gguf-to-mlx)", cmdDev},
		"pull":        {"download a model (REPO, or one GGUF file: REPO:QUANT) from Hugging Face into the shared cache", cmdPull},
		"models":      {"list the models in the Hugging Face cache, ollama's store and LM Studio's folder", cmdModels},
		"rm":          {"remove a model from the Hugging Face cache", cmdRm},
		"sessions":    {"list, show, rename or remove saved conversations", cmdSessions},
		"controllers": {"list the controllers (shipped and your own), or build your own", cmdControllers},
	}
}

func main() {
	// Ctrl-C, kill and a closed terminal (SIGHUP) all end the work at
	// hand the same way: a reply stops, the chat saves its session, and
	// the process exits cleanly.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	os.Exit(realMain(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func realMain(ctx context.Context, args []string, out, errOut io.Writer) int {
	cmds := commands()
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		usage(out, cmds)
		return 0
	}
	if asksHelp(args) {
		errOut = out // help asked for is the output, so that | less shows it
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		// No sub-command: the chat, with its flags.
		args = append([]string{"chat"}, args...)
	}
	c, ok := cmds[args[0]]
	if !ok {
		fmt.Fprintf(errOut, "driftwood: unknown command %q\n\n", args[0])
		usage(errOut, cmds)
		return 2
	}
	if err := c.run(ctx, args[1:], out, errOut); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(errOut, "driftwood %s: %v\n", args[0], err)
		var coded interface{ ExitCode() int }
		if errors.As(err, &coded) {
			return coded.ExitCode()
		}
		return 1
	}
	return 0
}

// asksHelp reports whether args ask for help (-h, -help or --help before
// any "--").
func asksHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

func usage(w io.Writer, cmds map[string]command) {
	fmt.Fprintln(w, "usage: driftwood [chat flags]       the chat\n       driftwood <command> [flags]\n\ncommands:")
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-12s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(w, "\nrun 'driftwood <command> -h' for a command's flags")
}

// parseInterspersed parses fs's flags wherever they stand among args
// ("sessions show NAME --sessions-dir D") and returns the positional
// arguments.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos, args = append(pos, args[0]), args[1:]
	}
}

// folderFlag defines a folder flag by the name every sub-command gives
// it (--sessions-dir, --controllers-dir), and older names as aliases
// that set the same value.
func folderFlag(fs *flag.FlagSet, name, value, usage string, aliases ...string) *string {
	p := fs.String(name, value, usage)
	for _, a := range aliases {
		fs.StringVar(p, a, value, "the same as --"+name)
	}
	return p
}
