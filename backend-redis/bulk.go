package redisq

import (
	"context"
	"fmt"

	"github.com/boson-go/boson/core"
)

var _ core.BulkActor = (*Backend)(nil)

// BulkStep implements core.BulkActor: it reads the step's page as
// SearchJobs does (up to req.Limit jobs after req.Cursor, in the narrowed
// states), then applies the action to all of them in one script call
// (luaBulk), which Redis runs alone: a reader or a claim sees the store
// before the step or after it. Each job gets the state check and effects
// of Cancel, Retry or DeleteJob (the same Lua transition); a job that moved
// to a state the action refuses, or was deleted, counts as Skipped, one
// whose retry finds its while-active idempotency key held by another job
// as Failed. Each queue whose jobs changed hears one wake-up, where the
// per-job calls would have sent one each.
//
// A script reaches one slot of a Redis Cluster. With a slot per queue (no
// Options.OneSlot) a step therefore ends before the first job of another
// queue than its first job's, visiting fewer than req.Limit jobs, and its
// Next resumes right after the last job it visited. On one node, or with
// Options.OneSlot, a step spans queues.
//
// When the script fails nothing is counted and Next is req.Cursor: the
// jobs the step may have changed have left the narrowed states, so the
// resumed action misses none. Cost: that of the page, plus one script
// call whose work grows with the jobs it visits.
func (b *Backend) BulkStep(ctx context.Context, req core.BulkRequest) (core.BulkResult, error) {
	op := "bulk " + string(req.Action)
	if err := b.check(op); err != nil {
		return core.BulkResult{Next: req.Cursor}, err
	}
	jobs, res, err := core.BulkJobs(ctx, b, req)
	if err != nil {
		return res, err
	}
	if b.sharded {
		for i, j := range jobs {
			if j.Queue != jobs[0].Queue {
				jobs = jobs[:i]
				res.Next, res.Done = jobs[i-1].ID, false
				break
			}
		}
	}
	if len(jobs) == 0 {
		return res, nil
	}
	opt := ""
	switch {
	case req.Action == core.BulkCancel:
		opt = core.CancelReason(req.Reason)
	case req.Force:
		opt = "1"
	}
	args := make([]any, 0, 2+2*len(jobs))
	args = append(args, string(req.Action), opt)
	for _, j := range jobs {
		args = append(args, j.Queue, j.ID)
	}
	out, err := b.run(ctx, scriptBulk, jobs[0].Queue, args...)
	if err != nil {
		return core.BulkResult{Next: req.Cursor}, wrap(op, err)
	}
	arr, _ := out.([]any)
	if len(arr) != len(jobs) {
		return core.BulkResult{Next: req.Cursor}, fmt.Errorf("redisq: %s: %d outcomes for %d jobs", op, len(arr), len(jobs))
	}
	var gone []string
	for i, j := range jobs {
		why, _ := str(arr[i])
		err := refusal(op, j.ID, why)
		res.Record(j.ID, err)
		switch {
		case err != nil:
		case req.Action == core.BulkCancel:
			b.forget(j.ID)
		case req.Action == core.BulkDelete:
			gone = append(gone, j.ID)
		}
	}
	b.unmap(ctx, gone...)
	return res, nil
}
