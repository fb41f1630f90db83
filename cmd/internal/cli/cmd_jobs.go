package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/boson-go/boson/core"
)

type jobsFlags struct {
	searchFlags
	cursor            string
	limit             int
	desc, all         bool
	runs, checkpoints bool
}

func init() {
	register(&command{
		name:    "jobs",
		args:    "[list] | get JOB_ID",
		summary: "list jobs with filters and pages, or show one job",
		help: `"boson jobs" (or "boson jobs list") lists jobs oldest first (--desc: newest
first), one page of --limit at a time; the last line names the cursor of the
next page ("next: ID", pass it as --cursor), or use --all to follow every page.
Filters combine: --queue, --task and --state (comma-separated states: queued,
running, sleeping, succeeded, failed, cancelled); the search filters --header,
--id-prefix, --ids, --created-from/--created-to and --finished-from/
--finished-to need a store that offers search (else exit 6), and
--limit-key and --sequence-key a store that enforces flow control (else exit
6). Times are RFC 3339, a date, or a duration ago such as 2h. A sequence's
jobs in the order they run: --queue Q --sequence-key K.

"boson jobs get ID" shows one job with its payload, result and last error,
and the fan-in wait it is parked on ("waiting on 3 of 5 jobs (all)") or last
began; --runs adds its runs, --checkpoints its checkpoints. An unknown id
exits 3.`,
		flags: func(fs *flag.FlagSet, c *call) {
			jf := &jobsFlags{}
			c.opts = jf
			jf.searchFlags.register(fs)
			fs.IntVar(&jf.limit, "limit", core.DefaultPageSize, fmt.Sprintf("page `size`, at most %d", core.MaxPageSize))
			fs.StringVar(&jf.cursor, "cursor", "", "continue after this job `id` (the \"next\" of the previous page)")
			fs.BoolVar(&jf.desc, "desc", false, "newest first")
			fs.BoolVar(&jf.all, "all", false, "follow every page")
			fs.BoolVar(&jf.runs, "runs", false, "get: include the job's runs")
			fs.BoolVar(&jf.checkpoints, "checkpoints", false, "get: include the job's checkpoints")
		},
		run: runJobs,
	})
}

func runJobs(ctx context.Context, c *call) error {
	jf := c.opts.(*jobsFlags)
	sub := "list"
	if len(c.args) > 0 {
		sub = c.args[0]
		c.args = c.args[1:]
	}
	switch sub {
	case "list":
		if err := c.noArgs(); err != nil {
			return err
		}
		return listJobs(ctx, c, jf)
	case "get", "show":
		if len(c.args) != 1 {
			return usagef("jobs get takes one job id")
		}
		return getJob(ctx, c, jf, c.args[0])
	}
	return usagef("unknown jobs subcommand %q; want list or get", sub)
}

func (f *jobsFlags) filter() (core.JobSearch, error) {
	s, err := f.search(time.Now())
	if err != nil {
		return s, err
	}
	s.Limit, s.Cursor, s.Desc = f.limit, f.cursor, f.desc
	if f.limit < 1 || f.limit > core.MaxPageSize {
		return s, usagef("--limit %d is outside [1, %d]", f.limit, core.MaxPageSize)
	}
	return s, core.ValidateJobSearch(s)
}

// jobsPage is the JSON shape of a listing.
type jobsPage struct {
	Jobs []core.Job `json:"jobs"`
	Next string     `json:"next"`
}

func listJobs(ctx context.Context, c *call, jf *jobsFlags) error {
	filter, err := jf.filter()
	if err != nil {
		return err
	}
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	st, err := c.open(ctx)
	if err != nil {
		return err
	}
	list := func(ctx context.Context, s core.JobSearch) (core.JobPage, error) {
		return st.Backend.ListJobs(ctx, s.JobFilter)
	}
	if jf.searching() {
		js, err := capability[core.JobSearcher](st, "job search (--header, --id-prefix, --ids, time ranges, --limit-key, --sequence-key)")
		if err == nil {
			err = jf.needFlow(st)
		}
		if err != nil {
			return err
		}
		list = js.SearchJobs
	}
	out := jobsPage{Jobs: []core.Job{}}
	for {
		page, err := list(ctx, filter)
		if err != nil {
			return err
		}
		out.Jobs = append(out.Jobs, page.Jobs...)
		out.Next = page.Next
		if !jf.all || page.Next == "" {
			break
		}
		filter.Cursor = page.Next
	}
	if c.jsonOut {
		return c.printJSON(out)
	}
	tw := tabwriter.NewWriter(c.env.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tQUEUE\tTASK\tATTEMPT\tCREATED\tRUN AT\tLAST ERROR")
	for _, j := range out.Jobs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d/%d\t%s\t%s\t%s\n", j.ID, j.State, j.Queue, j.Task, j.Attempt, j.MaxAttempts,
			stamp(j.CreatedAt), stamp(j.RunAt), oneLine(j.LastError, 60))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if out.Next != "" {
		c.printf("next: %s\n", out.Next)
	}
	return nil
}

// jobDetail is the JSON shape of "jobs get".
type jobDetail struct {
	Job         core.Job          `json:"job"`
	Runs        []core.Run        `json:"runs,omitempty"`
	Checkpoints []core.Checkpoint `json:"checkpoints,omitempty"`
	// Wait is the job's latest fan-in wait, when its store keeps waits
	// and the job began one.
	Wait *core.Wait `json:"wait,omitempty"`
}

func getJob(ctx context.Context, c *call, jf *jobsFlags, id string) error {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	st, err := c.open(ctx)
	if err != nil {
		return err
	}
	j, err := st.Backend.GetJob(ctx, id)
	if err != nil {
		return err
	}
	d := jobDetail{Job: j}
	if jf.runs {
		if d.Runs, err = st.Backend.ListRuns(ctx, id); err != nil && !errors.Is(err, core.ErrNotFound) {
			return err
		}
	}
	if jf.checkpoints {
		if d.Checkpoints, err = st.Backend.Checkpoints(ctx, id); err != nil && !errors.Is(err, core.ErrNotFound) {
			return err
		}
	}
	if aw, ok := st.Backend.(core.Awaiter); ok {
		w, err := aw.JobWait(ctx, id)
		switch {
		case err == nil:
			d.Wait = &w
		case !errors.Is(err, core.ErrNotFound):
			return err
		}
	}
	if c.jsonOut {
		return c.printJSON(d)
	}
	tw := tabwriter.NewWriter(c.env.Stdout, 2, 4, 2, ' ', 0)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", k, v)
		}
	}
	row("id", j.ID)
	row("state", string(j.State))
	row("queue", j.Queue)
	row("task", j.Task)
	row("priority", fmt.Sprint(j.Priority))
	row("attempt", fmt.Sprintf("%d of %d", j.Attempt, j.MaxAttempts))
	row("created", stamp(j.CreatedAt))
	row("run at", stamp(j.RunAt))
	row("first started", stamp(j.FirstStartedAt))
	row("finished", stamp(j.FinishedAt))
	row("idempotency key", j.IdempotencyKey)
	row("unique", uniqueText(j))
	row("limit key", j.LimitKey)
	row("sequence key", j.SequenceKey)
	row("actor", j.Actor)
	for _, k := range sortedKeys(j.Headers) {
		row("header "+k, j.Headers[k])
	}
	if j.Lease.Token > 0 {
		row("lease", fmt.Sprintf("worker %s, token %d, expires %s", j.Lease.WorkerID, j.Lease.Token, stamp(j.Lease.ExpiresAt)))
	}
	if d.Wait != nil {
		row("wait", d.Wait.Describe(j))
	}
	row("payload", string(j.Payload))
	row("result", string(j.Result))
	row("last error", j.LastError)
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(d.Runs) > 0 {
		c.printf("\nruns:\n")
		tw = tabwriter.NewWriter(c.env.Stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  RUN\tATTEMPT\tSTATUS\tWORKER\tSTARTED\tDURATION\tERROR")
		for _, r := range d.Runs {
			fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Attempt, r.Status, r.WorkerID, stamp(r.StartedAt), r.Duration(), oneLine(r.Error, 60))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(d.Checkpoints) > 0 {
		c.printf("\ncheckpoints:\n")
		for _, cp := range d.Checkpoints {
			c.printf("  %s = %s\n", cp.Step, oneLine(string(cp.Value), 100))
		}
	}
	return nil
}

// uniqueText says how long a job's idempotency key holds, when not until
// retention (the default).
func uniqueText(j core.Job) string {
	switch j.Unique {
	case core.UniqueWhileActive:
		return "while active (the key is free once the job is terminal)"
	case core.UniqueByPeriod:
		return fmt.Sprintf("by period of %s (held until %s)", j.UniquePeriod, stamp(core.PeriodEnd(j.CreatedAt, j.UniquePeriod)))
	}
	return ""
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

func oneLine(s string, n int) string {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "\r", " "), "\n", " ")
	if len(s) > n {
		return s[:n-1] + "…"
	}
	return s
}
