package cli

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/boson-go/boson/core"
)

type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

// statsFlags are the flags of stats.
type statsFlags struct{ tasks, queues stringList }

func init() {
	register(&command{
		name:    "stats",
		args:    "[--queue Q]... [--task T]...",
		summary: "job counts per queue (and pause state), or per task with run statistics",
		help: `Without --task: one row per queue with its job counts by state and whether it
is paused (--queue limits the rows). With --task (repeatable or
comma-separated): one row per task with its job counts, its run counts by
status and the summed run time. "boson tasks" lists every task's name.

On a store that enforces flow control, a second table follows with each
limited queue and task (with --task: the tasks named; else every task with a
stored config, where the store lists tasks): its running jobs against
max running, its other limits, and its busiest limit keys with their running
jobs. "boson config" sets the limits.`,
		flags: func(fs *flag.FlagSet, c *call) {
			f := &statsFlags{}
			c.opts = f
			fs.Var(&f.queues, "queue", "only this `queue` (repeatable)")
			fs.Var(&f.tasks, "task", "show this `task` (repeatable)")
		},
		run: runStats,
	})
}

// statsOut is the JSON shape of stats.
type statsOut struct {
	Queues []core.QueueInfo `json:"queues,omitempty"`
	Tasks  []core.TaskStats `json:"tasks,omitempty"`
	// Limits are the limited queues and tasks (a store with flow control).
	Limits []flowLimit `json:"limits,omitempty"`
}

func runStats(ctx context.Context, c *call) error {
	f := c.opts.(*statsFlags)
	statsTasks, statsQueues := f.tasks, f.queues
	if err := c.noArgs(); err != nil {
		return err
	}
	for _, t := range statsTasks {
		if err := core.ValidateName("task", t); err != nil {
			return err
		}
	}
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	st, err := c.open(ctx)
	if err != nil {
		return err
	}
	var out statsOut
	if len(statsTasks) > 0 {
		for _, t := range statsTasks {
			ts, err := st.Backend.TaskStats(ctx, t)
			if err != nil {
				return err
			}
			ts.Task = t
			out.Tasks = append(out.Tasks, ts)
		}
	} else {
		qs, err := st.Backend.ListQueues(ctx)
		if err != nil {
			return err
		}
		for _, q := range qs {
			if len(statsQueues) == 0 || contains(statsQueues, q.Queue) {
				out.Queues = append(out.Queues, q)
			}
		}
		for _, want := range statsQueues {
			if !containsQueue(out.Queues, want) {
				cfg, err := st.Backend.GetQueueConfig(ctx, want)
				if err != nil {
					return err
				}
				out.Queues = append(out.Queues, core.QueueInfo{Queue: want, Jobs: map[core.JobState]int64{}, Paused: cfg.Paused})
			}
		}
	}
	var tasks []string
	if len(statsTasks) > 0 {
		tasks = statsTasks
	}
	if out.Limits, err = flowLimits(ctx, st, out.Queues, tasks); err != nil {
		return err
	}
	if c.jsonOut {
		if len(statsTasks) > 0 {
			return c.printJSON(struct {
				Tasks  []core.TaskStats `json:"tasks"`
				Limits []flowLimit      `json:"limits,omitempty"`
			}{out.Tasks, out.Limits})
		}
		if out.Queues == nil {
			out.Queues = []core.QueueInfo{}
		}
		return c.printJSON(struct {
			Queues []core.QueueInfo `json:"queues"`
			Limits []flowLimit      `json:"limits,omitempty"`
		}{out.Queues, out.Limits})
	}
	tw := tabwriter.NewWriter(c.env.Stdout, 2, 4, 2, ' ', tabwriter.AlignRight)
	if len(statsTasks) > 0 {
		fmt.Fprint(tw, "TASK\t")
		for _, s := range core.AllStates {
			fmt.Fprintf(tw, "%s\t", s)
		}
		fmt.Fprint(tw, "runs ok\tfailed\tlost\tcancelled\trun time\t\n")
		for _, t := range out.Tasks {
			fmt.Fprintf(tw, "%s\t", t.Task)
			for _, s := range core.AllStates {
				fmt.Fprintf(tw, "%d\t", t.Jobs[s])
			}
			fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%s\t\n", t.Runs[core.RunSucceeded], t.Runs[core.RunFailed], t.Runs[core.RunLost], t.Runs[core.RunCancelled], t.RunTime)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		return printLimits(c.env.Stdout, out.Limits)
	}
	fmt.Fprint(tw, "QUEUE\tPAUSED\t")
	for _, s := range core.AllStates {
		fmt.Fprintf(tw, "%s\t", s)
	}
	fmt.Fprintln(tw)
	for _, q := range out.Queues {
		paused := "no"
		if q.Paused {
			paused = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t", q.Queue, paused)
		for _, s := range core.AllStates {
			fmt.Fprintf(tw, "%d\t", q.Jobs[s])
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return printLimits(c.env.Stdout, out.Limits)
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func containsQueue(qs []core.QueueInfo, name string) bool {
	for _, q := range qs {
		if q.Queue == name {
			return true
		}
	}
	return false
}
