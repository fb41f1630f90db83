package engine

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/boson-go/boson/core"
)

// Finished runs are rows of runs; the open run of a running job lives in
// the job row (run_id, token, started_at). The run reads select from
// both, in one statement and so from one snapshot.

// runCols are the columns scanRun reads, for a finished run (r joined
// with its job j) and for an open run (the job row j).
const (
	finishedRunCols = "r.job_id, r.token, r.id, r.attempt, r.worker_id, r.status, r.started_at, r.finished_at, r.error, j.queue, j.task"
	openRunCols     = "j.id, j.token, j.run_id, j.attempt, j.worker_id, 'running' AS status, j.started_at, 0 AS finished_at, '' AS error, j.queue, j.task"
)

// scanRun reads one row of finishedRunCols or openRunCols.
func scanRun(rows Rows) (core.Run, error) {
	var run core.Run
	var status string
	var started, finished int64
	if err := rows.Scan(&run.JobID, &run.Token, &run.ID, &run.Attempt, &run.WorkerID, &status, &started, &finished, &run.Error, &run.Queue, &run.Task); err != nil {
		return core.Run{}, err
	}
	run.Status = core.RunStatus(status)
	run.StartedAt, run.FinishedAt = fromUS(started), fromUS(finished)
	return run, nil
}

// GetRun implements core.RunReader.
func (e *Engine) GetRun(ctx context.Context, runID string) (core.Run, error) {
	if err := e.check("get run"); err != nil {
		return core.Run{}, err
	}
	jobID, token, err := core.ParseRunID(runID)
	if err != nil {
		return core.Run{}, err
	}
	var runs []core.Run
	if plausibleID(jobID) {
		err = e.scanAll(ctx, e.st.Reader(), "SELECT "+finishedRunCols+" FROM {s}runs r JOIN {s}jobs j ON j.id = r.job_id WHERE r.job_id = ? AND r.token = ?"+
			" UNION ALL SELECT "+openRunCols+" FROM {s}jobs j WHERE j.id = ? AND j.token = ? AND j.state = 'running'",
			[]any{jobID, token, jobID, token}, func(rows Rows) error {
				run, err := scanRun(rows)
				runs = append(runs, run)
				return err
			})
	}
	if err != nil {
		return core.Run{}, e.wrap("get run", err)
	}
	if len(runs) == 0 {
		return core.Run{}, fmt.Errorf("boson/%s: get run: %w: run %s", e.d.Name(), core.ErrNotFound, runID)
	}
	return runs[0], nil
}

// runBranches renders the conditions of the two halves of a run
// selection: over finished runs (alias r, with their job as j) and over
// open runs (the running jobs j). A half is nil when the statuses exclude
// it; none reports that no run can match.
func runBranches(f core.RunFilter) (fin *where, open *where, none bool) {
	if f.JobID != "" && !plausibleID(f.JobID) {
		return nil, nil, true
	}
	wantOpen, wantFin := len(f.Statuses) == 0, len(f.Statuses) == 0
	var finStatuses []string
	for _, s := range f.Statuses {
		if s == core.RunRunning {
			wantOpen = true
		} else {
			wantFin = true
			finStatuses = append(finStatuses, string(s))
		}
	}
	build := func(job, token, started string, isOpen bool) *where {
		w := &where{}
		if isOpen {
			w.add("j.state = 'running'")
		} else if len(finStatuses) > 0 {
			slices.Sort(finStatuses)
			finStatuses = slices.Compact(finStatuses)
			// The statuses are validated names, written as literals so
			// that a prepared statement's plan can use runs_failed, whose
			// predicate names failed and lost.
			w.add("r.status IN ('" + strings.Join(finStatuses, "', '") + "')")
		}
		if f.JobID != "" {
			w.add(job+" = ?", f.JobID)
		}
		if f.Queue != "" {
			w.add("j.queue = ?", f.Queue)
		}
		if f.Task != "" {
			w.add("j.task = ?", f.Task)
		}
		if !f.Since.IsZero() {
			w.add(started+" >= ?", ceilTimeUS(f.Since))
		}
		if !f.Before.IsZero() {
			w.add(started+" < ?", ceilTimeUS(f.Before))
		}
		if f.Cursor != "" {
			cj, ct, _ := core.ParseRunID(f.Cursor)
			op := ">"
			if f.Desc {
				op = "<"
			}
			w.add("("+job+", "+token+") "+op+" (?, ?)", cj, ct)
			if !isOpen { // lets a merge join start the job side there too
				w.add("j.id "+op+"= ?", cj)
			}
		}
		return w
	}
	if wantFin {
		fin = build("r.job_id", "r.token", "r.started_at", false)
	}
	if wantOpen {
		open = build("j.id", "j.token", "j.started_at", true)
	}
	return fin, open, false
}

// validRunFilter checks f as core does, and that its ids can be compared.
func validRunFilter(f core.RunFilter) error {
	if err := core.ValidateRunFilter(f); err != nil {
		return err
	}
	if !utf8.ValidString(f.Cursor) || strings.ContainsRune(f.Cursor, 0) {
		return fmt.Errorf("%w: cursor: is not a run id", core.ErrInvalidArgument)
	}
	return nil
}

// ListAllRuns implements core.RunReader with keyset pagination on
// (job_id, token).
func (e *Engine) ListAllRuns(ctx context.Context, f core.RunFilter) (core.RunPage, error) {
	if err := e.check("list all runs"); err != nil {
		return core.RunPage{}, err
	}
	if err := validRunFilter(f); err != nil {
		return core.RunPage{}, err
	}
	fin, open, none := runBranches(f)
	if none {
		return core.RunPage{}, nil
	}
	// Each half is cut to a page in its own order, so that it walks its
	// index only as far as one page needs; the merge takes the first page.
	order := " ORDER BY 1, 2"
	if f.Desc {
		order = " ORDER BY 1 DESC, 2 DESC"
	}
	size := f.PageSize()
	var parts []string
	var args []any
	half := func(sql string, w *where) {
		parts = append(parts, "SELECT * FROM ("+sql+w.sql()+order+" LIMIT ?) AS h"+strconv.Itoa(len(parts)))
		args = append(append(args, w.args...), size+1)
	}
	if fin != nil {
		half("SELECT "+finishedRunCols+" FROM {s}runs r JOIN {s}jobs j ON j.id = r.job_id", fin)
	}
	if open != nil {
		half("SELECT "+openRunCols+" FROM {s}jobs j", open)
	}
	var runs []core.Run
	err := e.scanAll(ctx, e.st.Reader(), strings.Join(parts, " UNION ALL ")+order+" LIMIT ?", append(args, size+1), func(rows Rows) error {
		run, err := scanRun(rows)
		runs = append(runs, run)
		return err
	})
	if err != nil {
		return core.RunPage{}, e.wrap("list all runs", err)
	}
	var page core.RunPage
	if len(runs) > size {
		runs = runs[:size]
		page.Next = core.RunID(runs[size-1].JobID, runs[size-1].Token)
	}
	page.Runs = runs
	return page, nil
}

// CountRuns implements core.RunReader.
func (e *Engine) CountRuns(ctx context.Context, f core.RunFilter) (map[core.RunStatus]int64, error) {
	if err := e.check("count runs"); err != nil {
		return nil, err
	}
	f.Limit, f.Cursor, f.Desc = 0, "", false
	if err := validRunFilter(f); err != nil {
		return nil, err
	}
	out := map[core.RunStatus]int64{}
	fin, open, none := runBranches(f)
	if none {
		return out, nil
	}
	var parts []string
	var args []any
	if fin != nil {
		from := " FROM {s}runs r"
		if f.Queue != "" || f.Task != "" {
			from += " JOIN {s}jobs j ON j.id = r.job_id"
		}
		parts = append(parts, "SELECT r.status, count(*)"+from+fin.sql()+" GROUP BY r.status")
		args = append(args, fin.args...)
	}
	if open != nil {
		parts = append(parts, "SELECT 'running', count(*) FROM {s}jobs j"+open.sql())
		args = append(args, open.args...)
	}
	if err := e.countBy(ctx, strings.Join(parts, " UNION ALL "), args, func(k string, n int64) {
		if n > 0 {
			out[core.RunStatus(k)] += n
		}
	}); err != nil {
		return nil, e.wrap("count runs", err)
	}
	return out, nil
}
