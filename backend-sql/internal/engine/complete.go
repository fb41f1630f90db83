package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/boson-go/boson/core"
)

// Complete implements core.QueueBackend: one atomic dialect step per
// round of distinct job ids (a batch normally has one round).
func (e *Engine) Complete(ctx context.Context, items []core.Completion) ([]error, error) {
	if err := e.check("complete"); err != nil {
		return nil, err
	}
	if err := e.limits.ValidateBatch("completions", len(items)); err != nil {
		return nil, err
	}
	errs := make([]error, len(items))
	pending := make([]int, 0, len(items))
	for i, it := range items {
		if err := core.ValidateLease(it.Lease); err != nil {
			errs[i] = err
			continue
		}
		if err := e.limits.ValidatePayload("result", it.Result); err != nil {
			errs[i] = err
			continue
		}
		pending = append(pending, i)
	}
	for len(pending) > 0 {
		var round, later []int
		seen := map[string]bool{}
		for _, i := range pending {
			if seen[items[i].Lease.JobID] {
				later = append(later, i)
				continue
			}
			seen[items[i].Lease.JobID] = true
			round = append(round, i)
		}
		batch := make([]core.Completion, len(round))
		for k, i := range round {
			batch[k] = items[i]
		}
		ok, queues, err := e.d.Complete(ctx, e, batch, e.NowArg())
		if err != nil {
			return nil, e.wrap("complete", err)
		}
		for k, i := range round {
			if !ok[k] {
				errs[i] = fmt.Errorf("boson/%s: complete: %w: job %s is not running under token %d",
					e.d.Name(), core.ErrLeaseLost, items[i].Lease.JobID, items[i].Lease.Token)
			}
		}
		for _, name := range queues {
			e.hub.signal(name)
		}
		pending = later
	}
	return errs, nil
}

// CompleteSQL is the portable batched completion for stores without a
// single-statement form; q is one write transaction. Each chunk of up to
// 300 items costs two statements: an UPDATE ... FROM (VALUES ...) of the
// jobs, returning the accepted ones, and the INSERT of their finished
// runs, read from the job rows.
func (e *Engine) CompleteSQL(ctx context.Context, q Querier, items []core.Completion, now int64) ([]bool, []string, error) {
	ok := make([]bool, len(items))
	index := make(map[string]int, len(items))
	for k, it := range items {
		index[it.Lease.JobID] = k
	}
	var queues []string
	seen := map[string]bool{}
	const chunk = 300
	for start := 0; start < len(items); start += chunk {
		part := items[start:min(start+chunk, len(items))]
		args := make([]any, 0, 1+3*len(part))
		args = append(args, now)
		for _, it := range part {
			args = append(args, it.Lease.JobID, it.Lease.Token, nullBytes(it.Result))
		}
		values := strings.TrimSuffix(strings.Repeat("(?, ?, ?), ", len(part)), ", ")
		var done, counted []string
		var refs []flowRef
		err := e.scanAll(ctx, q, `UPDATE {s}jobs SET state = 'succeeded', result = v.column3, finished_at = ?
			FROM (VALUES `+values+`) AS v
			WHERE {s}jobs.id = v.column1 AND {s}jobs.token = v.column2 AND {s}jobs.state = 'running'
			RETURNING {s}jobs.id, {s}jobs.queue, {s}jobs.task, coalesce({s}jobs.limit_key, ''), coalesce({s}jobs.sequence_key, ''),
				{s}jobs.awaited_by IS NOT NULL`, args, func(rows Rows) error {
			var id, queue string
			var awaited bool
			r := flowRef{wasRunning: true}
			if err := rows.Scan(&id, &queue, &r.task, &r.limitKey, &r.seqKey, &awaited); err != nil {
				return err
			}
			if awaited {
				counted = append(counted, id)
			}
			r.queue = queue
			refs = append(refs, r)
			ok[index[id]] = true
			done = append(done, id)
			if !seen[queue] {
				seen[queue] = true
				queues = append(queues, queue)
			}
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
		if len(done) == 0 {
			continue
		}
		if err := e.flowAfter(ctx, q, refs); err != nil {
			return nil, nil, err
		}
		if err := e.countAwaited(ctx, q, counted, now, false); err != nil {
			return nil, nil, err
		}
		ids, err := json.Marshal(done)
		if err != nil {
			return nil, nil, err
		}
		if _, err := q.Exec(ctx, e.render(`INSERT INTO {s}runs (job_id, token, id, attempt, worker_id, status, started_at, finished_at)
			SELECT id, token, run_id, attempt, worker_id, 'succeeded', started_at, finished_at FROM {s}jobs
			WHERE id IN (SELECT value FROM json_each(?))`), string(ids)); err != nil {
			return nil, nil, err
		}
	}
	return ok, queues, nil
}

// nullBytes stores an empty value as NULL.
func nullBytes(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}
