package natsq

import (
	"context"
	"sort"

	"github.com/boson-go/boson/core"
)

var _ core.FlowController = (*Backend)(nil)

// RunningByKey implements core.FlowController from this replica's running
// counters: the running jobs of task by limit key, most running first
// (ties by key), at most limit groups. Like every read it answers from the
// local replica; call Sync first to include other processes' latest
// claims.
func (b *Backend) RunningByKey(ctx context.Context, task string, limit int) ([]core.KeyCount, error) {
	if err := b.readable(ctx); err != nil {
		return nil, err
	}
	if err := core.ValidateRunningByKey(task, limit); err != nil {
		return nil, err
	}
	if limit == 0 {
		limit = core.DefaultPageSize
	}
	b.mu.RLock()
	out := make([]core.KeyCount, 0, len(b.st.flow.keyRunning[task]))
	for k, n := range b.st.flow.keyRunning[task] {
		out = append(out, core.KeyCount{Key: k, Running: n})
	}
	b.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Running != out[j].Running {
			return out[i].Running > out[j].Running
		}
		return out[i].Key < out[j].Key
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// searchMatches is s.Matches with the flow filters: a search that names a
// limit key or a sequence key selects only the jobs with exactly that key.
func searchMatches(s *core.JobSearch, j *core.Job) bool {
	if s.LimitKey != "" && j.LimitKey != s.LimitKey || s.SequenceKey != "" && j.SequenceKey != s.SequenceKey {
		return false
	}
	return s.Matches(*j)
}

// hasFlowFilter reports whether s filters by a flow key.
func hasFlowFilter(s *core.JobSearch) bool { return s.LimitKey != "" || s.SequenceKey != "" }
