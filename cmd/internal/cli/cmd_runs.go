package cli

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/boson-go/boson/core"
)

type runsFlags struct {
	job, queue, task, statuses string
	since, before, cursor      string
	limit                      int
	desc, all                  bool
}

func init() {
	register(&command{
		name:    "runs",
		args:    "[list] | count | get RUN_ID",
		summary: "list or count runs across jobs, or show one run",
		help: `"boson runs" (or "runs list") lists runs across jobs, ordered by job id and
claim (--desc: newest job first), one page of --limit at a time; the last line
names the cursor of the next page, or --all follows every page. "runs count"
prints the number of matching runs by status. "runs get RUN_ID" shows one run
(a run id is JOB_ID.TOKEN, as "jobs get --runs" shows); an unknown one exits 3.

Filters combine: --job, --queue, --task, --status (comma-separated: running,
succeeded, failed, sleeping, cancelled, lost), --since and --before (the run's
start; RFC 3339, a date, or a duration ago such as 2h). Needs a store that
offers run reading; others exit 6.`,
		flags: func(fs *flag.FlagSet, c *call) {
			f := &runsFlags{}
			c.opts = f
			fs.StringVar(&f.job, "job", "", "only runs of this job `id`")
			fs.StringVar(&f.queue, "queue", "", "only runs of jobs of this `queue`")
			fs.StringVar(&f.task, "task", "", "only runs of jobs of this `task`")
			fs.StringVar(&f.statuses, "status", "", "only runs in these `statuses` (comma-separated)")
			fs.StringVar(&f.since, "since", "", "only runs started at or after this `time`")
			fs.StringVar(&f.before, "before", "", "only runs started before this `time`")
			fs.IntVar(&f.limit, "limit", core.DefaultPageSize, fmt.Sprintf("page `size`, at most %d", core.MaxPageSize))
			fs.StringVar(&f.cursor, "cursor", "", "continue after this run `id` (the \"next\" of the previous page)")
			fs.BoolVar(&f.desc, "desc", false, "newest job first")
			fs.BoolVar(&f.all, "all", false, "follow every page")
		},
		run: runRuns,
	})
	register(&command{
		name:    "tasks",
		summary: "every task that has jobs or a stored config, with job counts",
		help: `Lists every task the store knows: those with retained jobs and those with a
stored config, with their job counts by state. Needs a store that offers task
listing; others exit 6.`,
		run: runTasks,
	})
}

func (f *runsFlags) filter(now time.Time) (core.RunFilter, error) {
	rf := core.RunFilter{JobID: f.job, Queue: f.queue, Task: f.task, Limit: f.limit, Cursor: f.cursor, Desc: f.desc}
	if f.statuses != "" {
		for _, v := range strings.Split(f.statuses, ",") {
			st := core.RunStatus(strings.TrimSpace(v))
			if !st.Valid() {
				return rf, usagef("--status %q is not a run status", v)
			}
			rf.Statuses = append(rf.Statuses, st)
		}
	}
	var err error
	if rf.Since, err = parseWhen("--since", f.since, now); err != nil {
		return rf, err
	}
	if rf.Before, err = parseWhen("--before", f.before, now); err != nil {
		return rf, err
	}
	if f.limit < 1 || f.limit > core.MaxPageSize {
		return rf, usagef("--limit %d is outside [1, %d]", f.limit, core.MaxPageSize)
	}
	return rf, core.ValidateRunFilter(rf)
}

// runsPage is the JSON shape of a run listing.
type runsPage struct {
	Runs []core.Run `json:"runs"`
	Next string     `json:"next"`
}

// runCounts is the JSON shape of "runs count".
type runCounts struct {
	Total    int64                    `json:"total"`
	Statuses map[core.RunStatus]int64 `json:"statuses"`
}

func runRuns(ctx context.Context, c *call) error {
	f := c.opts.(*runsFlags)
	sub := "list"
	if len(c.args) > 0 {
		sub, c.args = c.args[0], c.args[1:]
	}
	var runID string
	switch sub {
	case "list", "count":
		if err := c.noArgs(); err != nil {
			return err
		}
	case "get", "show":
		if len(c.args) != 1 {
			return usagef("runs get takes one run id")
		}
		runID = c.args[0]
		if _, _, err := core.ParseRunID(runID); err != nil {
			return err
		}
	default:
		return usagef("unknown runs subcommand %q; want list, count or get", sub)
	}
	rf, err := f.filter(time.Now())
	if err != nil {
		return err
	}
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	rr, _, err := openCapability[core.RunReader](ctx, c, "run reading across jobs")
	if err != nil {
		return err
	}
	switch sub {
	case "get", "show":
		r, err := rr.GetRun(ctx, runID)
		if err != nil {
			return err
		}
		if c.jsonOut {
			return c.printJSON(r)
		}
		return c.runTable([]core.Run{r})
	case "count":
		counts, err := rr.CountRuns(ctx, rf)
		if err != nil {
			return err
		}
		out := runCounts{Statuses: map[core.RunStatus]int64{}}
		for k, v := range counts {
			out.Statuses[k] = v
			out.Total += v
		}
		if c.jsonOut {
			return c.printJSON(out)
		}
		tw := tabwriter.NewWriter(c.env.Stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "STATUS\tRUNS")
		for _, s := range core.AllRunStatuses {
			if n, ok := out.Statuses[s]; ok {
				fmt.Fprintf(tw, "%s\t%d\n", s, n)
			}
		}
		fmt.Fprintf(tw, "total\t%d\n", out.Total)
		return tw.Flush()
	}
	out := runsPage{Runs: []core.Run{}}
	for {
		page, err := rr.ListAllRuns(ctx, rf)
		if err != nil {
			return err
		}
		out.Runs = append(out.Runs, page.Runs...)
		out.Next = page.Next
		if !f.all || page.Next == "" {
			break
		}
		rf.Cursor = page.Next
	}
	if c.jsonOut {
		return c.printJSON(out)
	}
	if err := c.runTable(out.Runs); err != nil {
		return err
	}
	if out.Next != "" {
		c.printf("next: %s\n", out.Next)
	}
	return nil
}

func (c *call) runTable(runs []core.Run) error {
	tw := tabwriter.NewWriter(c.env.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tSTATUS\tQUEUE\tTASK\tATTEMPT\tWORKER\tSTARTED\tDURATION\tERROR")
	for _, r := range runs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", r.ID, r.Status, r.Queue, r.Task, r.Attempt, r.WorkerID,
			stamp(r.StartedAt), r.Duration(), oneLine(r.Error, 60))
	}
	return tw.Flush()
}

func runTasks(ctx context.Context, c *call) error {
	if err := c.noArgs(); err != nil {
		return err
	}
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	tl, _, err := openCapability[core.TaskLister](ctx, c, "task listing")
	if err != nil {
		return err
	}
	ts, err := tl.ListTasks(ctx)
	if err != nil {
		return err
	}
	if ts == nil {
		ts = []core.TaskInfo{}
	}
	if c.jsonOut {
		return c.printJSON(map[string]any{"tasks": ts})
	}
	tw := tabwriter.NewWriter(c.env.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprint(tw, "TASK\tCONFIG")
	for _, s := range core.AllStates {
		fmt.Fprintf(tw, "\t%s", strings.ToUpper(string(s)))
	}
	fmt.Fprintln(tw)
	for _, t := range ts {
		cfg := "-"
		if t.HasConfig {
			cfg = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s", t.Name, cfg)
		for _, s := range core.AllStates {
			fmt.Fprintf(tw, "\t%d", t.Counts[s])
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}
