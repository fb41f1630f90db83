package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/boson-go/boson/cmd/internal/store"
	"github.com/boson-go/boson/core"
)

// statsBusiestKeys is how many of a task's busiest limit keys stats shows.
const statsBusiestKeys = 5

// flowLimit is a limited task or queue with its running jobs against its
// limits, as stats shows it.
type flowLimit struct {
	// Kind is "task" or "queue".
	Kind    string `json:"kind"`
	Name    string `json:"name"`
	Running int64  `json:"running"`
	// AtLimit reports that Running reached MaxRunning.
	AtLimit                  bool `json:"at_limit"`
	MaxRunning               int  `json:"max_running,omitempty"`
	MaxRunningPerKey         int  `json:"max_running_per_key,omitempty"`
	MaxStartsPerSecond       int  `json:"max_starts_per_second,omitempty"`
	MaxStartsPerSecondPerKey int  `json:"max_starts_per_second_per_key,omitempty"`
	// BusiestKeys are the task's limit keys with the most running jobs.
	BusiestKeys []core.KeyCount `json:"busiest_keys,omitempty"`
}

func atLimit(running int64, limit int) bool { return limit > 0 && running >= int64(limit) }

// taskLimit reads one task's limits; ok is false when it has none.
func taskLimit(ctx context.Context, st *store.Store, fc core.FlowController, task string) (flowLimit, bool, error) {
	cfg, err := st.Backend.GetTaskConfig(ctx, task)
	if isNotFound(err) {
		return flowLimit{}, false, nil
	}
	if err != nil {
		return flowLimit{}, false, err
	}
	if cfg.MaxRunning == 0 && cfg.MaxRunningPerKey == 0 && cfg.MaxStartsPerSecond == 0 && cfg.MaxStartsPerSecondPerKey == 0 {
		return flowLimit{}, false, nil
	}
	l := flowLimit{Kind: "task", Name: task, MaxRunning: cfg.MaxRunning, MaxRunningPerKey: cfg.MaxRunningPerKey,
		MaxStartsPerSecond: cfg.MaxStartsPerSecond, MaxStartsPerSecondPerKey: cfg.MaxStartsPerSecondPerKey}
	c, err := st.Backend.CountJobs(ctx, core.JobFilter{Task: task, States: []core.JobState{core.StateRunning}})
	if err != nil {
		return flowLimit{}, false, err
	}
	l.Running = c[core.StateRunning]
	l.AtLimit = atLimit(l.Running, l.MaxRunning)
	if l.BusiestKeys, err = fc.RunningByKey(ctx, task, statsBusiestKeys); err != nil {
		return flowLimit{}, false, err
	}
	return l, true, nil
}

// queueLimit reads one queue's limit; ok is false when it has none.
func queueLimit(ctx context.Context, st *store.Store, q core.QueueInfo) (flowLimit, bool, error) {
	cfg, err := st.Backend.GetQueueConfig(ctx, q.Queue)
	if err != nil && !isNotFound(err) {
		return flowLimit{}, false, err
	}
	if cfg.MaxRunning == 0 {
		return flowLimit{}, false, nil
	}
	l := flowLimit{Kind: "queue", Name: q.Queue, Running: q.Jobs[core.StateRunning], MaxRunning: cfg.MaxRunning}
	l.AtLimit = atLimit(l.Running, l.MaxRunning)
	return l, true, nil
}

// flowLimits returns the limited queues of qs and the limited tasks:
// those named, else every task the store lists (with core.TaskLister).
// A store without flow control enforces no limit, so it has none to show.
func flowLimits(ctx context.Context, st *store.Store, qs []core.QueueInfo, tasks []string) ([]flowLimit, error) {
	fc, ok := st.Backend.(core.FlowController)
	if !ok {
		return nil, nil
	}
	var out []flowLimit
	for _, q := range qs {
		l, ok, err := queueLimit(ctx, st, q)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, l)
		}
	}
	if tasks == nil {
		if tl, ok := st.Backend.(core.TaskLister); ok {
			ts, err := tl.ListTasks(ctx)
			if err != nil {
				return nil, err
			}
			for _, t := range ts {
				if t.HasConfig {
					tasks = append(tasks, t.Name)
				}
			}
			sort.Strings(tasks)
		}
	}
	for _, t := range tasks {
		l, ok, err := taskLimit(ctx, st, fc, t)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, l)
		}
	}
	return out, nil
}

// printLimits writes the limits table after the stats table.
func printLimits(w io.Writer, ls []flowLimit) error {
	if len(ls) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LIMITED\tRUNNING\tMAX RUNNING\tPER KEY\tSTARTS/S\tSTARTS/S PER KEY\tBUSIEST KEYS")
	for _, l := range ls {
		running := fmt.Sprint(l.Running)
		if l.MaxRunning > 0 {
			running = fmt.Sprintf("%d of %d", l.Running, l.MaxRunning)
			if l.AtLimit {
				running += " (at limit)"
			}
		}
		var keys []string
		for _, k := range l.BusiestKeys {
			s := fmt.Sprintf("%s=%d", k.Key, k.Running)
			if atLimit(k.Running, l.MaxRunningPerKey) {
				s += " (at limit)"
			}
			keys = append(keys, s)
		}
		fmt.Fprintf(tw, "%s %s\t%s\t%s\t%s\t%s\t%s\t%s\n", l.Kind, l.Name, running, dash(l.MaxRunning), dash(l.MaxRunningPerKey),
			dash(l.MaxStartsPerSecond), dash(l.MaxStartsPerSecondPerKey), strings.Join(keys, ", "))
	}
	return tw.Flush()
}

func isNotFound(err error) bool { return errors.Is(err, core.ErrNotFound) }

func dash(n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprint(n)
}
