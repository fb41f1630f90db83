package engine

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/boson-go/boson/core"
)

// GetJob implements core.QueueBackend.
func (e *Engine) GetJob(ctx context.Context, jobID string) (core.Job, error) {
	if err := e.check("get job"); err != nil {
		return core.Job{}, err
	}
	if !plausibleID(jobID) {
		return core.Job{}, fmt.Errorf("boson/%s: get job: %w: job %q", e.d.Name(), core.ErrNotFound, jobID)
	}
	jobs, err := collectJobs(e.st.Reader().Query(ctx, e.render("SELECT "+JobCols("")+" FROM {s}jobs WHERE id = ?"), jobID))
	if err != nil {
		return core.Job{}, e.wrap("get job", err)
	}
	if len(jobs) == 0 {
		return core.Job{}, fmt.Errorf("boson/%s: get job: %w: job %s", e.d.Name(), core.ErrNotFound, jobID)
	}
	return jobs[0], nil
}

// filterWhere renders the WHERE clause of a job filter (without cursor).
func filterWhere(f core.JobFilter) (string, []any) {
	var conds []string
	var args []any
	if f.Queue != "" {
		conds = append(conds, "queue = ?")
		args = append(args, f.Queue)
	}
	if f.Task != "" {
		conds = append(conds, "task = ?")
		args = append(args, f.Task)
	}
	if len(f.States) > 0 {
		conds = append(conds, "state IN ("+placeholders(len(f.States))+")")
		for _, s := range f.States {
			args = append(args, string(s))
		}
	}
	return strings.Join(conds, " AND "), args
}

// ListJobs implements core.QueueBackend with keyset pagination on id.
func (e *Engine) ListJobs(ctx context.Context, f core.JobFilter) (core.JobPage, error) {
	if err := e.check("list jobs"); err != nil {
		return core.JobPage{}, err
	}
	if err := core.ValidateJobFilter(f); err != nil {
		return core.JobPage{}, err
	}
	where, args := filterWhere(f)
	if f.Cursor != "" {
		if where != "" {
			where += " AND "
		}
		if f.Desc {
			where += "id < ?"
		} else {
			where += "id > ?"
		}
		args = append(args, f.Cursor)
	}
	sql := "SELECT " + JobCols("") + " FROM {s}jobs"
	if where != "" {
		sql += " WHERE " + where
	}
	if f.Desc {
		sql += " ORDER BY id DESC"
	} else {
		sql += " ORDER BY id"
	}
	size := f.PageSize()
	sql += " LIMIT ?"
	args = append(args, size+1)
	jobs, err := collectJobs(e.st.Reader().Query(ctx, e.render(sql), args...))
	if err != nil {
		return core.JobPage{}, e.wrap("list jobs", err)
	}
	var page core.JobPage
	if len(jobs) > size {
		jobs = jobs[:size]
		page.Next = jobs[size-1].ID
	}
	page.Jobs = jobs
	return page, nil
}

// CountJobs implements core.QueueBackend.
func (e *Engine) CountJobs(ctx context.Context, f core.JobFilter) (map[core.JobState]int64, error) {
	if err := e.check("count jobs"); err != nil {
		return nil, err
	}
	f.Limit, f.Cursor = 0, ""
	if err := core.ValidateJobFilter(f); err != nil {
		return nil, err
	}
	where, args := filterWhere(f)
	sql := "SELECT state, count(*) FROM {s}jobs"
	if where != "" {
		sql += " WHERE " + where
	}
	sql += " GROUP BY state"
	out := map[core.JobState]int64{}
	err := e.scanAll(ctx, e.st.Reader(), sql, args, func(rows Rows) error {
		var s string
		var n int64
		if err := rows.Scan(&s, &n); err != nil {
			return err
		}
		out[core.JobState(s)] = n
		return nil
	})
	if err != nil {
		return nil, e.wrap("count jobs", err)
	}
	return out, nil
}

// scanAll runs a query and hands each row to fn.
func (e *Engine) scanAll(ctx context.Context, q Querier, tmpl string, args []any, fn func(Rows) error) error {
	rows, err := q.Query(ctx, e.render(tmpl), args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// TaskStats implements core.QueueBackend.
func (e *Engine) TaskStats(ctx context.Context, task string) (core.TaskStats, error) {
	if err := e.check("task stats"); err != nil {
		return core.TaskStats{}, err
	}
	if err := core.ValidateName("task", task); err != nil {
		return core.TaskStats{}, err
	}
	st := core.TaskStats{Task: task, Jobs: map[core.JobState]int64{}, Runs: map[core.RunStatus]int64{}}
	r := e.st.Reader()
	err := e.scanAll(ctx, r, "SELECT state, count(*) FROM {s}jobs WHERE task = ? GROUP BY state", []any{task}, func(rows Rows) error {
		var s string
		var n int64
		if err := rows.Scan(&s, &n); err != nil {
			return err
		}
		st.Jobs[core.JobState(s)] = n
		return nil
	})
	if err == nil {
		err = e.scanAll(ctx, r, `SELECT r.status, count(*), CAST(coalesce(sum(CASE WHEN r.finished_at > 0 THEN r.finished_at - r.started_at ELSE 0 END), 0) AS BIGINT)
			FROM {s}runs r JOIN {s}jobs j ON j.id = r.job_id WHERE j.task = ? GROUP BY r.status
			UNION ALL
			SELECT 'running', count(*), CAST(0 AS BIGINT) FROM {s}jobs WHERE task = ? AND state = 'running'`, []any{task, task}, func(rows Rows) error {
			var s string
			var n, us int64
			if err := rows.Scan(&s, &n, &us); err != nil {
				return err
			}
			if n == 0 {
				return nil
			}
			st.Runs[core.RunStatus(s)] += n
			st.RunTime += fromUSDuration(us)
			return nil
		})
	}
	if err != nil {
		return core.TaskStats{}, e.wrap("task stats", err)
	}
	return st, nil
}

// ListQueues implements core.QueueBackend.
func (e *Engine) ListQueues(ctx context.Context) ([]core.QueueInfo, error) {
	if err := e.check("list queues"); err != nil {
		return nil, err
	}
	byName := map[string]*core.QueueInfo{}
	get := func(name string) *core.QueueInfo {
		qi := byName[name]
		if qi == nil {
			qi = &core.QueueInfo{Queue: name, Jobs: map[core.JobState]int64{}}
			byName[name] = qi
		}
		return qi
	}
	r := e.st.Reader()
	err := e.scanAll(ctx, r, "SELECT queue, state, count(*) FROM {s}jobs GROUP BY queue, state", nil, func(rows Rows) error {
		var q, s string
		var n int64
		if err := rows.Scan(&q, &s, &n); err != nil {
			return err
		}
		get(q).Jobs[core.JobState(s)] = n
		return nil
	})
	if err == nil {
		err = e.scanAll(ctx, r, "SELECT queue, paused, declared FROM {s}queue_configs", nil, func(rows Rows) error {
			var q string
			var paused, declared int64
			if err := rows.Scan(&q, &paused, &declared); err != nil {
				return err
			}
			qi := get(q)
			qi.Paused, qi.Declared = paused != 0, declared != 0
			return nil
		})
	}
	if err != nil {
		return nil, e.wrap("list queues", err)
	}
	out := make([]core.QueueInfo, 0, len(byName))
	for _, qi := range byName {
		out = append(out, *qi)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Queue < out[b].Queue })
	return out, nil
}
