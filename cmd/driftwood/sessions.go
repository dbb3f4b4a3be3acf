package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/driftwoodlabs/driftwood/config"
	"github.com/driftwoodlabs/driftwood/engine/cpu"
	"github.com/driftwoodlabs/driftwood/hub"
	"github.com/driftwoodlabs/driftwood/sessions"
)

// cmdSessions implements "driftwood sessions [list|show NAME|rm NAME|mv OLD
// NEW|import FILE]".
func cmdSessions(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := flag.NewFlagSet("driftwood sessions", flag.ContinueOnError)
	fs.SetOutput(errOut)
	dir := folderFlag(fs, "sessions-dir", sessions.DefaultDir(), "sessions folder", "dir")
	var imp importFlags
	fs.StringVar(&imp.model, "model", "", "import: the model the prompt cache was made with, a folder or repo id (default: the one the cache names)")
	fs.StringVar(&imp.name, "name", "", "import: the new session's name (default: the file's name without its extension)")
	fs.IntVar(&imp.threads, "threads", 0, "import: CPU threads that read the tokens back (0: one per physical core)")
	fs.StringVar(&imp.config, "config", config.Path(), "import: configuration file (the session's sampling)")
	fs.Usage = func() {
		fmt.Fprintln(errOut, "usage: driftwood sessions [list | show NAME | rm NAME | mv OLD NEW | import FILE] [flags]")
		fmt.Fprintln(errOut, "  import FILE makes a session of a prompt cache mlx-lm saved (mlx_lm.cache_prompt), its tokens read back from the model's state")
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	verb := "list"
	if len(pos) > 0 {
		verb, pos = pos[0], pos[1:]
	}
	store := sessions.Store{Dir: *dir}
	want := map[string]int{"list": 0, "show": 1, "rm": 1, "mv": 2, "import": 1}
	n, ok := want[verb]
	if !ok {
		return fmt.Errorf("unknown verb %q (want list, show, rm, mv or import)", verb)
	}
	if len(pos) != n {
		fs.Usage()
		return fmt.Errorf("%s takes %d argument(s)", verb, n)
	}
	given := false
	fs.Visit(func(f *flag.Flag) {
		given = given || f.Name == "model" || f.Name == "name" || f.Name == "threads" || f.Name == "config"
	})
	if given && verb != "import" {
		return errImportFlags
	}
	if err := cpu.CheckThreads(imp.threads); err != nil {
		return fmt.Errorf("--threads %d: %w", imp.threads, err)
	}
	switch verb {
	case "import":
		return importSession(ctx, store, pos[0], imp, out, errOut)
	case "show":
		return showSession(out, store, pos[0])
	case "rm":
		return store.Remove(pos[0])
	case "mv":
		return store.Rename(pos[0], pos[1])
	}
	list, err := store.List()
	if err != nil {
		return err
	}
	if len(list) == 0 {
		fmt.Fprintf(out, "no sessions in %s\n", *dir)
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tMODEL\tTURNS\tTOKENS\tSIZE\tUPDATED")
	for _, s := range list {
		if s.Err != nil {
			fmt.Fprintf(tw, "%s\t(unreadable: %v)\t\t\t%s\t\n", s.Name, s.Err, hub.FormatSize(s.Size))
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\n", s.Name, s.Model, s.Turns, s.Tokens, hub.FormatSize(s.Size), s.Updated.Local().Format("2006-01-02 15:04"))
	}
	return tw.Flush()
}

func showSession(out io.Writer, store sessions.Store, name string) error {
	path, err := store.Path(name)
	if err != nil {
		return err
	}
	meta, err := sessions.ReadMeta(path)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "session  %s\nmodel    %s\ntokens   %d (%d turns)\ncreated  %s\nupdated  %s\n", name, meta.Model, len(meta.Tokens), meta.Turns(),
		meta.Created.Local().Format("2006-01-02 15:04"), meta.Updated.Local().Format("2006-01-02 15:04"))
	if th := meta.EnableThinking; th != nil {
		fmt.Fprintf(out, "thinking %s\n", map[bool]string{true: "on", false: "off"}[*th])
	}
	if c := meta.Controller; c != nil {
		fmt.Fprintf(out, "controller %s %q\n", c.Name, c.Arg)
	}
	if meta.Imported > 0 {
		fmt.Fprintf(out, "imported %d tokens of model state, which the first message's text stands for (sessions import)\n", meta.Imported)
	}
	for _, m := range meta.Messages {
		fmt.Fprintf(out, "\n[%s]\n%s\n", m.Role, m.Content)
	}
	return nil
}
