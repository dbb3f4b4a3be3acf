package mlxc

import (
	"errors"
	"fmt"
)

// Group is an MLX distributed group: the processes (ranks) that run one
// model together, rank 0 the one that drives.
type Group struct {
	h          cGroup
	Rank, Size int
}

// JoinGroup joins the group that the environment describes for MLX's
// distributed backend (for "ring": MLX_RANK, this process's rank, and
// MLX_HOSTFILE, a JSON list with one list of "ip:port" per rank),
// waiting for the other ranks. It is strict: a group that cannot be
// formed is an error, never a group of one. The group lives as long as
// the process (MLX keeps it).
func (t *Thread) JoinGroup(backend string) (*Group, error) {
	t.live()
	a := t.lib.api
	if a.distributedInit05 != nil {
		return nil, errors.New("running across ranks needs mlx-c 0.6.0 or newer (older releases cannot choose MLX's ring backend)")
	}
	g := &Group{}
	if !t.check("mlx_distributed_init", a.distributedInit(&g.h, true, backend)) {
		return nil, t.err
	}
	if g.h.ctx == nil {
		t.check("mlx_distributed_init", 1)
		return nil, t.err
	}
	g.Rank, g.Size = int(a.groupRank(g.h)), int(a.groupSize(g.h))
	if g.Size < 1 || g.Rank < 0 || g.Rank >= g.Size {
		return nil, fmt.Errorf("mlx: distributed group says rank %d of %d", g.Rank, g.Size)
	}
	return g, nil
}

// ClearCache hands the memory MLX keeps for reuse (freed buffers) back
// to the system.
func (t *Thread) ClearCache() {
	t.live()
	t.check("mlx_clear_cache", t.lib.api.clearCache())
}

// AllSum is the elementwise sum of x over the group's ranks, on every
// rank.
func (t *Thread) AllSum(x *Array, g *Group) *Array {
	return t.op("mlx_distributed_all_sum", func(res *cArray) int32 { return t.lib.api.allSum(res, x.c(), g.h, t.s()) })
}

// AllGather is the ranks' x concatenated along the first axis in rank
// order, on every rank.
func (t *Thread) AllGather(x *Array, g *Group) *Array {
	return t.op("mlx_distributed_all_gather", func(res *cArray) int32 { return t.lib.api.allGather(res, x.c(), g.h, t.s()) })
}
