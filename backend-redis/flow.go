package redisq

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/boson-go/boson/core"
)

var _ core.FlowController = (*Backend)(nil)

// RunningByKey returns the running jobs of task grouped by limit key, most
// running first (ties by key), in one script: from the key counts of the
// prefix's flow hash ("k|<task>|<key>") while the task's are kept, which
// every transition into or out of running keeps in step, else from the
// records of the jobs in the lease sets of the prefix's queues. On a
// cluster with a slot per queue (no Options.OneSlot) flow control is not
// offered whole, and it fails with core.ErrUnsupported. See core.FlowController.
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
	v, err := b.run(ctx, scriptRunningByKey, core.DefaultQueue, task)
	if err != nil {
		return nil, wrap("running by key", err)
	}
	a, _ := v.([]any)
	sums := map[string]int64{}
	for i := 1; i+1 < len(a); i += 2 {
		k, _ := a[i].(string)
		if n, _ := a[i+1].(int64); n > 0 {
			sums[k] += n
		}
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
