package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/boson-go/boson/cmd/soak"
	"github.com/boson-go/boson/core"
)

type bulkFlags struct {
	searchFlags
	all, dryRun, force   bool
	progress, noProgress bool
	cursor, reason       string
	batch                int
}

const (
	defaultBulkBatch = 500
	// bulkBarWidth is the number of cells of bulk's progress bar.
	bulkBarWidth = 30
)

func init() {
	register(&command{
		name:    "bulk",
		args:    "cancel|retry|delete [filters]",
		summary: "cancel, retry or delete every job a filter matches, in bounded batches",
		help: `Applies one action to every job the filters match, --batch jobs at a time
(each batch is a page of the store's search, safe to run while workers claim):
  cancel  queued, sleeping and running jobs (a running job's lease is superseded)
  retry   failed and cancelled jobs (queued again, due now)
  delete  jobs in any state but running, with their runs and checkpoints;
          --force also cancels and deletes running ones
Jobs the action does not apply to are not touched. The filters are those of
"boson jobs" (--queue --task --state --header --id-prefix --ids
--created-from/--created-to --finished-from/--finished-to); a command with no
filter would match every job and is refused unless --all says so.

--dry-run only counts the jobs the action would change. Progress goes to
stderr: on a terminal (or with --progress) a bar redrawn in place with the
share of the dry run's count visited, the jobs changed, skipped and failed
and the rate; elsewhere a plain line at most every 200 ms; --no-progress:
none. The summary goes to stdout (--json: one object with op, matched,
changed, skipped, failed, errors and cursor, and nothing else). A job
that fails for another reason is counted, and the command exits with the
first such error after visiting the rest. When it stops early
(an error, a timeout, an interrupt) it names the cursor: pass it as --cursor
to resume where it stopped. Needs a store that offers search (and deletion
for delete); others exit 6.`,
		flags: func(fs *flag.FlagSet, c *call) {
			f := &bulkFlags{}
			c.opts = f
			f.searchFlags.register(fs)
			fs.BoolVar(&f.all, "all", false, "allow a filter that matches every job")
			fs.BoolVar(&f.dryRun, "dry-run", false, "only count the jobs the action would change")
			fs.BoolVar(&f.force, "force", false, "delete: also cancel and delete running jobs")
			fs.BoolVar(&f.progress, "progress", false, "draw the progress bar on stderr even when it is not a terminal")
			fs.BoolVar(&f.noProgress, "no-progress", false, "print no progress on stderr")
			fs.StringVar(&f.cursor, "cursor", "", "resume after this job `id` (printed by an interrupted run)")
			fs.StringVar(&f.reason, "reason", "", "cancel: why, recorded as each job's last error")
			fs.IntVar(&f.batch, "batch", defaultBulkBatch, fmt.Sprintf("jobs per batch, at most %d", core.MaxPageSize))
		},
		run: runBulk,
	})
}

// bulkOut is the JSON shape of bulk's summary.
type bulkOut struct {
	Op     string `json:"op"`
	DryRun bool   `json:"dry_run"`
	// Matched is the number of jobs the action applies to: counted by a dry
	// run, visited by a real one.
	Matched int64 `json:"matched"`
	// Changed counts the jobs the action changed; Skipped those that
	// changed state between the search and the action (a worker finished
	// or claimed them) and were left alone.
	Changed int64 `json:"changed"`
	Skipped int64 `json:"skipped"`
	// Failed counts the jobs the action failed on for another reason;
	// Errors holds the first of those errors.
	Failed int64            `json:"failed"`
	Errors []core.BulkError `json:"errors,omitempty"`
	// Cursor is where to resume; empty once every match was visited.
	Cursor string `json:"cursor,omitempty"`
	Done   bool   `json:"done"`
	Error  string `json:"error,omitempty"`
}

func runBulk(ctx context.Context, c *call) error {
	f := c.opts.(*bulkFlags)
	if len(c.args) != 1 {
		return usagef("bulk takes one action: cancel, retry or delete")
	}
	req := core.BulkRequest{Action: core.BulkAction(c.args[0]), Reason: f.reason, Force: f.force, Limit: f.batch, Cursor: f.cursor}
	switch req.Action {
	case core.BulkCancel, core.BulkRetry, core.BulkDelete:
	default:
		return usagef("unknown bulk action %q; want cancel, retry or delete", req.Action)
	}
	if f.batch < 1 || f.batch > core.MaxPageSize {
		return usagef("--batch %d is outside [1, %d]", f.batch, core.MaxPageSize)
	}
	if f.force && req.Action != core.BulkDelete {
		return usagef("--force applies to delete only")
	}
	var err error
	if req.Search, err = f.search(time.Now()); err != nil {
		return err
	}
	if matchesAll(req.Search) && !f.all {
		return usagef("the filter matches every job; narrow it or pass --all")
	}
	if err := core.ValidateBulk(req); err != nil {
		return err
	}
	ctx, cancel := c.withExplicitTimeout(ctx)
	defer cancel()
	_, st, err := openCapability[core.JobSearcher](ctx, c, "job search, which bulk actions need")
	if err == nil {
		err = f.needFlow(st)
	}
	if err != nil {
		return err
	}
	if req.Action == core.BulkDelete {
		if _, err := capability[core.JobDeleter](st, "job deletion"); err != nil {
			return err
		}
	}
	dry := req
	dry.DryRun, dry.Cursor = true, ""
	pre, err := core.Bulk(ctx, st.Backend, dry)
	if err != nil {
		return err
	}
	out := bulkOut{Op: string(req.Action), DryRun: f.dryRun}
	if f.dryRun {
		out.Matched, out.Done = pre.Matched, true
		return c.bulkSummary(out, nil)
	}
	p := c.progress(!f.noProgress)
	p.terminal = p.terminal || f.progress
	start := time.Now()
	for {
		res, err := core.Bulk(ctx, st.Backend, req)
		out.Matched += res.Matched
		out.Changed += int64(res.Changed)
		out.Skipped += int64(res.Skipped)
		out.Failed += int64(res.Failed)
		out.Errors = append(out.Errors, res.Errors...)
		out.Cursor = res.Next
		if err == nil && !res.Done && res.Next == "" {
			err = fmt.Errorf("bulk %s: the store gave no cursor to continue from", req.Action)
		}
		if err != nil {
			if out.Cursor == "" {
				out.Cursor = req.Cursor // resume where this step began
			}
			p.end()
			return c.bulkSummary(out, err)
		}
		if total := max(pre.Matched, out.Matched); p.terminal {
			p.line(res.Done, "%s", bulkBar(req.Action, out, total, bulkBarWidth, time.Since(start)))
		} else {
			p.line(res.Done, "bulk %s: %d of about %d visited, %d changed, %d skipped, %d failed", req.Action, out.Matched, total, out.Changed, out.Skipped, out.Failed)
		}
		if res.Done {
			p.end()
			out.Done = true
			if len(out.Errors) > core.MaxBulkErrors {
				out.Errors = out.Errors[:core.MaxBulkErrors]
			}
			var ferr error
			if out.Failed > 0 {
				ferr = fmt.Errorf("%d jobs failed, the first: %s: %s", out.Failed, out.Errors[0].JobID, out.Errors[0].Error)
			}
			return c.bulkSummary(out, ferr)
		}
		req.Cursor = res.Next
	}
}

// bulkBar renders one line of bulk's progress bar: a bar of width cells and
// the whole percentage of total that out has visited (rounded down, so 100%
// only once out reaches total, or when total is 0), out's counts and the
// rate of jobs visited over elapsed (0 for an elapsed of 0 or less).
func bulkBar(op core.BulkAction, out bulkOut, total int64, width int, elapsed time.Duration) string {
	pct := int64(100)
	if total > 0 {
		pct = min(out.Matched*100/total, 100)
	}
	rate := 0.0
	if elapsed > 0 {
		rate = float64(out.Matched) / elapsed.Seconds()
	}
	return fmt.Sprintf("bulk %s %s %3d%% %d/%d, %d changed, %d skipped, %d failed, %s jobs/s",
		op, soak.FormatBar(float64(pct)/100, width), pct, out.Matched, total, out.Changed, out.Skipped, out.Failed, soak.FormatRate(rate))
}

// bulkSummary prints the summary; with err it says where to resume and
// returns err.
func (c *call) bulkSummary(out bulkOut, err error) error {
	if err != nil {
		out.Error = err.Error()
	}
	if c.jsonOut {
		if perr := c.printJSON(out); perr != nil {
			return perr
		}
	} else {
		switch {
		case out.DryRun:
			c.printf("would %s %d jobs (dry run)\n", out.Op, out.Matched)
		default:
			c.printf("%s: %d changed, %d skipped, %d failed of %d matched\n", out.Op, out.Changed, out.Skipped, out.Failed, out.Matched)
		}
	}
	if err != nil && out.Cursor != "" {
		fmt.Fprintf(c.env.Stderr, "boson bulk: stopped; resume with --cursor %s\n", out.Cursor)
	}
	return err
}

// progressLine draws a progress line on stderr: redrawn in place on a
// terminal at most every 100 ms, a new line at most every 200 ms otherwise.
type progressLine struct {
	w        io.Writer
	terminal bool
	last     time.Time
	drawn    bool
}

func (c *call) progress(on bool) *progressLine {
	p := &progressLine{terminal: c.env.Interactive}
	if on {
		p.w = c.env.Stderr
	}
	return p
}

// line draws the progress; force draws it even within 100 ms (terminal) or
// 200 ms of the last.
func (p *progressLine) line(force bool, format string, args ...any) {
	every := 200 * time.Millisecond
	if p.terminal {
		every = 100 * time.Millisecond
	}
	if p.w == nil || !force && time.Since(p.last) < every {
		return
	}
	p.last = time.Now()
	if p.terminal {
		fmt.Fprint(p.w, "\r\033[K")
	} else if p.drawn {
		fmt.Fprintln(p.w)
	}
	fmt.Fprintf(p.w, format, args...)
	p.drawn = true
}

// end finishes the line.
func (p *progressLine) end() {
	if p.w != nil && p.drawn {
		fmt.Fprintln(p.w)
		p.drawn = false
	}
}
