package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/boson-go/boson/core"
)

type bulkFlags struct {
	searchFlags
	all, dryRun, force, noProgress bool
	cursor, reason                 string
	batch                          int
}

const defaultBulkBatch = 500

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

--dry-run only counts the jobs the action would change. A progress line goes
to stderr (--no-progress: none); the summary goes to stdout (--json: one
object with op, matched, changed, skipped, failed, errors and cursor). A job
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
			fs.BoolVar(&f.noProgress, "no-progress", false, "print no progress line on stderr")
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
		p.line(res.Done, "bulk %s: %d of about %d visited, %d changed, %d skipped", req.Action, out.Matched, max(pre.Matched, out.Matched), out.Changed, out.Skipped)
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
// terminal, a new line at most every 200 ms otherwise.
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

// line draws the progress; force draws it even within 200 ms of the last.
func (p *progressLine) line(force bool, format string, args ...any) {
	if p.w == nil || !force && time.Since(p.last) < 200*time.Millisecond {
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
