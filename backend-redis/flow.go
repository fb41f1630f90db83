package redisq

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/boson-go/boson/core"
)

var _ core.FlowController = (*Backend)(nil)

// RunningByKey returns the running jobs of task grouped by limit key, most
// running first (ties by key), from the running counts that every
// transition into or out of running keeps in step ("k|<task>|<key>" of the
// prefix's flow hash). On a cluster with a slot per queue (no
// Options.OneSlot) flow control is not offered whole, and it fails with
// core.ErrUnsupported. See core.FlowController.
func (b *Backend) RunningByKey(ctx context.Context, task string, limit int) ([]core.KeyCount, error) {
	if err := b.check("running by key"); err != nil {
		return nil, err
	}
	if err := core.ValidateRunningByKey(task, limit); err != nil {
		return nil, err
	}
	if !b.ks.nsFlow {
		return nil, fmt.Errorf("redisq: running by key: %w: a cluster with a slot per queue does not offer flow control; use Options.OneSlot", core.ErrUnsupported)
	}
	if limit == 0 {
		limit = core.DefaultPageSize
	}
	pre := "k|" + task + "|"
	sums := map[string]int64{}
	it := b.rdb.HScan(ctx, b.ks.name(core.DefaultQueue, "flow"), 0, pre+"*", 1000).Iterator()
	for it.Next(ctx) {
		field := it.Val()
		if !it.Next(ctx) {
			break
		}
		n, _ := strconv.ParseInt(it.Val(), 10, 64)
		if k, ok := strings.CutPrefix(field, pre); ok && n > 0 {
			sums[k] += n
		}
	}
	if err := it.Err(); err != nil {
		return nil, wrap("running by key", err)
	}
	out := make([]core.KeyCount, 0, len(sums))
	for k, n := range sums {
		out = append(out, core.KeyCount{Key: k, Running: n})
	}
	slices.SortFunc(out, func(a, b core.KeyCount) int {
		if a.Running != b.Running {
			if a.Running > b.Running {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Key, b.Key)
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}
