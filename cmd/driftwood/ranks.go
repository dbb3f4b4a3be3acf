package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/driftwoodlabs/driftwood/backends"
	"github.com/driftwoodlabs/driftwood/config"
	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/cpu"
	"github.com/driftwoodlabs/driftwood/hub"
	"github.com/driftwoodlabs/driftwood/mlxbridge"
)

// rankFlags are run's flags for one model split across processes (MLX's
// ring backend; mlxbridge's ranks.go).
type rankFlags struct {
	ranks    int
	hostfile string
}

func (r *rankFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&r.ranks, "ranks", 0, "split the model across this many processes on this machine (MLX, over loopback; 2 or more)")
	fs.StringVar(&r.hostfile, "hostfile", "", "split the model across the machines this MLX hostfile lists (JSON: one [\"ip:port\"] per rank); run is rank 0 ($MLX_RANK unset or 0), each other machine runs `driftwood rank` with its MLX_RANK")
}

// active says whether the flags ask for several ranks.
func (r *rankFlags) active() bool { return r.ranks != 0 || r.hostfile != "" }

// rankModel is what every rank of a split model opens alike.
type rankModel struct {
	model, mlxLib, kvType, configPath string
}

// join makes this process rank 0 of a model split as the flags say (the
// backend, which must be MLX, becomes "mlx"): with --ranks it writes a
// hostfile of loopback ports and starts the other ranks (this program's
// rank command); with --hostfile the other machines start theirs. It
// returns the group and the function to call once rank 0's last backend
// is closed: it tells the other ranks to end and waits for the local
// ones, reporting the first that failed.
func (r *rankFlags) join(m rankModel, backend *string, errOut io.Writer) (*mlxbridge.Group, func() error, error) {
	switch {
	case r.ranks != 0 && r.hostfile != "":
		return nil, nil, errors.New("give --ranks N (processes on this machine) or --hostfile FILE (machines), not both")
	case r.ranks == 1 || r.ranks < 0:
		return nil, nil, fmt.Errorf("--ranks %d: give 2 or more (one process needs no flag)", r.ranks)
	case *backend == "cpu":
		return nil, nil, errors.New("--ranks and --hostfile split the model over MLX: they need --backend mlx (or auto)")
	case m.model == "":
		return nil, nil, errors.New("--ranks and --hostfile need --model (or model in the configuration): every rank opens it")
	}
	*backend = "mlx"
	wait := func() error { return nil }
	if r.hostfile != "" {
		if rank := os.Getenv("MLX_RANK"); rank != "" && rank != "0" {
			return nil, nil, fmt.Errorf("MLX_RANK is %s: run is rank 0; start the other ranks with `driftwood rank --hostfile %s --model …`", rank, r.hostfile)
		}
		os.Setenv("MLX_RANK", "0")
		os.Setenv("MLX_HOSTFILE", r.hostfile)
	} else {
		hosts, err := loopbackHostfile(r.ranks)
		if err != nil {
			return nil, nil, err
		}
		os.Setenv("MLX_RANK", "0")
		os.Setenv("MLX_HOSTFILE", hosts)
		if wait, err = startRanks(r.ranks, hosts, m, errOut); err != nil {
			return nil, nil, err
		}
	}
	group, err := mlxbridge.JoinGroup(m.mlxLib)
	if err != nil {
		return nil, nil, errors.Join(err, wait())
	}
	return group, func() error { return errors.Join(group.Exit(), wait()) }, nil
}

// loopbackHostfile writes a hostfile of n free loopback ports in a new
// temporary folder, removed when the ranks end.
func loopbackHostfile(n int) (string, error) {
	addrs := make([]string, n)
	for i := range addrs {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", fmt.Errorf("finding a free loopback port: %w", err)
		}
		addrs[i] = fmt.Sprintf(`["%s"]`, l.Addr())
		l.Close()
	}
	dir, err := os.MkdirTemp("", "driftwood-ranks-")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "hosts.json")
	return path, os.WriteFile(path, []byte("["+strings.Join(addrs, ",")+"]\n"), 0o600)
}

// rankWait bounds how long rank 0 waits for the others to end after it
// closed its backend.
const rankWait = 10 * time.Second

// startRanks starts ranks 1 to n−1 on this machine; their error output
// goes to errOut. The function returned waits for them (killing those
// still running after rankWait) and removes the hostfile's folder.
func startRanks(n int, hosts string, m rankModel, errOut io.Writer) (func() error, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	var procs []*exec.Cmd
	for rank := 1; rank < n; rank++ {
		cmd := exec.Command(self, "rank", "--model", m.model, "--mlx-lib", m.mlxLib, "--kv-type", m.kvType, "--config", m.configPath)
		cmd.Env = append(os.Environ(), "MLX_RANK="+strconv.Itoa(rank), "MLX_HOSTFILE="+hosts)
		cmd.Stderr = errOut
		if err := cmd.Start(); err != nil {
			for _, p := range procs {
				p.Process.Kill()
				p.Wait()
			}
			return nil, fmt.Errorf("starting rank %d: %w", rank, err)
		}
		procs = append(procs, cmd)
	}
	return func() error {
		defer os.RemoveAll(filepath.Dir(hosts))
		var errs []error
		deadline := time.Now().Add(rankWait)
		for i, p := range procs {
			done := make(chan error, 1)
			go func() { done <- p.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					errs = append(errs, fmt.Errorf("rank %d: %w", i+1, err))
				}
			case <-time.After(time.Until(deadline)):
				p.Process.Kill()
				<-done
				errs = append(errs, fmt.Errorf("rank %d did not end within %s of rank 0; stopped", i+1, rankWait))
			}
		}
		return errors.Join(errs...)
	}, nil
}

// cmdRank runs one rank other than 0 of a model split across processes:
// it loads its share of the model and follows rank 0 until rank 0 ends.
func cmdRank(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := flag.NewFlagSet("driftwood rank", flag.ContinueOnError)
	fs.SetOutput(errOut)
	configPath := fs.String("config", config.Path(), "configuration file")
	model := fs.String("model", "", "the model rank 0 runs (the same folder, file or repo id)")
	mlxLib := fs.String("mlx-lib", "", "libmlxc path (default: $DRIFTWOOD_MLXC, then the usual places)")
	kvType := fs.String("kv-type", "", kvTypeUsage+" (as rank 0's)")
	hostfile := fs.String("hostfile", "", "the MLX hostfile rank 0 uses (default: $MLX_HOSTFILE)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := config.Load(*configPath)
	if err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	pick(set, "model", model, cfg.Model)
	pick(set, "mlx-lib", mlxLib, cfg.MLXLibrary)
	pick(set, "kv-type", kvType, cfg.KVType)
	if *hostfile != "" {
		os.Setenv("MLX_HOSTFILE", *hostfile)
	}
	switch rank := os.Getenv("MLX_RANK"); {
	case *model == "":
		return errors.New("no model: give --model, the one rank 0 runs")
	case os.Getenv("MLX_HOSTFILE") == "":
		return errors.New("no hostfile: give --hostfile FILE (or set MLX_HOSTFILE)")
	case rank == "" || rank == "0":
		return errors.New("set MLX_RANK to this machine's rank, 1 or more (rank 0 is `driftwood run --hostfile …`)")
	}
	dir, err := hub.ResolveModel(ctx, *model, hub.OptionsFromEnv())
	if err != nil {
		return err
	}
	m, err := engine.LoadModel(dir)
	if err != nil {
		return err
	}
	defer m.Close()
	group, err := mlxbridge.JoinGroup(*mlxLib)
	if err != nil {
		return err
	}
	return mlxbridge.Follow(m, mlxbridge.Options{Library: *mlxLib, KVType: engine.KVType(*kvType), Group: group, Reference: backends.FloatCPU})
}

// rebuildOnCPU computes a conversation's KV state on the CPU backend,
// which runs the whole model from the mapped file: the save of a session
// whose split model lost a rank mid-reply (each rank held only its heads
// of the state), so that the prompt and the reply so far are kept.
func rebuildOnCPU(m *engine.Model, kvType engine.KVType, errOut io.Writer) func([]int32, int) (*engine.KVState, error) {
	return func(tokens []int32, window int) (*engine.KVState, error) {
		fmt.Fprintf(errOut, "driftwood: a rank was lost; computing the conversation's %d tokens again on the CPU to save it…\n", len(tokens))
		b, err := cpu.New(m, cpu.Options{KVType: kvType})
		if err != nil {
			return nil, err
		}
		defer b.Close()
		c, err := b.NewCache(window)
		if err != nil {
			return nil, err
		}
		defer c.Close()
		g := engine.NewGenerator(b, nil, m.Config.VocabSize)
		if err := g.Prefill(context.Background(), &engine.Sequence{Cache: c}, tokens); err != nil {
			return nil, err
		}
		return c.Export()
	}
}
