package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/boson-go/boson/cmd/internal/store"
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
object with op, matched, changed, skipped and cursor). When it stops early
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
	op := c.args[0]
	if op != "cancel" && op != "retry" && op != "delete" {
		return usagef("unknown bulk action %q; want cancel, retry or delete", op)
	}
	if f.batch < 1 || f.batch > core.MaxPageSize {
		return usagef("--batch %d is outside [1, %d]", f.batch, core.MaxPageSize)
	}
	if f.force && op != "delete" {
		return usagef("--force applies to delete only")
	}
	s, err := f.search(time.Now())
	if err != nil {
		return err
	}
	if matchesAll(s) && !f.all {
		return usagef("the filter matches every job; narrow it or pass --all")
	}
	if f.cursor != "" {
		if err := core.ValidateName("cursor", f.cursor); err != nil {
			return err
		}
	}
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	st, err := c.open(ctx)
	if err != nil {
		return err
	}
	b, err := newBulker(st, op, f.force, f.reason)
	if err != nil {
		return err
	}
	s, none := narrowStates(s, b.applies)
	out := bulkOut{Op: op, DryRun: f.dryRun}
	var total int64
	if !none {
		counts, err := b.js.CountSearch(ctx, s)
		if err != nil {
			return err
		}
		for _, n := range counts {
			total += n
		}
	}
	if f.dryRun || none {
		out.Matched, out.Done = total, true
		return c.bulkSummary(out, nil)
	}
	var prog io.Writer
	if !f.noProgress {
		prog = c.env.Stderr
	}
	s.Limit, s.Cursor = f.batch, f.cursor
	last := time.Time{}
	for {
		step, err := b.step(ctx, s)
		out.Matched += int64(step.visited)
		out.Changed += int64(step.changed)
		out.Skipped += int64(step.skipped)
		if step.last != "" {
			out.Cursor = step.last
		}
		if err != nil {
			if out.Cursor == "" {
				out.Cursor = s.Cursor
			}
			if prog != nil {
				fmt.Fprintln(prog)
			}
			return c.bulkSummary(out, err)
		}
		done := step.next == ""
		if prog != nil && (done || time.Since(last) >= 200*time.Millisecond) {
			last = time.Now()
			sep := "\n"
			if c.env.Interactive {
				sep = "\r"
			}
			fmt.Fprintf(prog, "%sbulk %s: %d of about %d visited, %d changed, %d skipped", sep, op, out.Matched, max(total, out.Matched), out.Changed, out.Skipped)
		}
		if done {
			if prog != nil {
				fmt.Fprintln(prog)
			}
			out.Cursor, out.Done = "", true
			return c.bulkSummary(out, nil)
		}
		s.Cursor = step.next
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
			c.printf("%s: %d changed, %d skipped of %d matched\n", out.Op, out.Changed, out.Skipped, out.Matched)
		}
	}
	if err != nil && out.Cursor != "" {
		fmt.Fprintf(c.env.Stderr, "boson bulk: stopped; resume with --cursor %s\n", out.Cursor)
	}
	return err
}

// bulker applies one bulk action through the store's capabilities.
type bulker struct {
	b       core.QueueBackend
	js      core.JobSearcher
	del     core.JobDeleter
	op      string
	force   bool
	reason  string
	applies []core.JobState
}

func newBulker(st *store.Store, op string, force bool, reason string) (*bulker, error) {
	js, err := capability[core.JobSearcher](st, "job search, which bulk actions need")
	if err != nil {
		return nil, err
	}
	b := &bulker{b: st.Backend, js: js, op: op, force: force, reason: reason}
	switch op {
	case "cancel":
		b.applies = []core.JobState{core.StateQueued, core.StateSleeping, core.StateRunning}
	case "retry":
		b.applies = []core.JobState{core.StateFailed, core.StateCancelled}
	case "delete":
		if b.del, err = capability[core.JobDeleter](st, "job deletion"); err != nil {
			return nil, err
		}
		b.applies = []core.JobState{core.StateQueued, core.StateSleeping, core.StateSucceeded, core.StateFailed, core.StateCancelled}
		if force {
			b.applies = append(b.applies, core.StateRunning)
		}
	}
	return b, nil
}

// narrowStates restricts s to the states in applies; none reports that
// no state is left, so that nothing can match.
func narrowStates(s core.JobSearch, applies []core.JobState) (out core.JobSearch, none bool) {
	if len(s.States) == 0 {
		s.States = append([]core.JobState(nil), applies...)
		return s, false
	}
	var keep []core.JobState
	for _, st := range s.States {
		for _, a := range applies {
			if st == a {
				keep = append(keep, st)
				break
			}
		}
	}
	s.States = keep
	return s, len(keep) == 0
}

type bulkStep struct {
	visited, changed, skipped int
	// last is the id of the last job handled; next the cursor of the
	// following page, empty on the last one.
	last, next string
}

// step handles one page of s.
func (b *bulker) step(ctx context.Context, s core.JobSearch) (bulkStep, error) {
	var out bulkStep
	page, err := b.js.SearchJobs(ctx, s)
	if err != nil {
		return out, err
	}
	out.next = page.Next
	for _, j := range page.Jobs {
		switch b.op {
		case "cancel":
			_, err = b.b.Cancel(ctx, j.ID, b.reason)
		case "retry":
			_, err = b.b.Retry(ctx, j.ID)
		case "delete":
			err = b.del.DeleteJob(ctx, j.ID, b.force)
		}
		switch {
		case err == nil:
			out.changed++
		case errors.Is(err, core.ErrInvalidState), errors.Is(err, core.ErrNotFound):
			out.skipped++
		default:
			return out, fmt.Errorf("%s %s: %w", b.op, j.ID, err)
		}
		out.visited++
		out.last = j.ID
	}
	return out, nil
}
