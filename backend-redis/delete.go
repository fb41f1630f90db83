package redisq

import (
	"context"
	"fmt"

	"github.com/boson-go/boson/core"
)

var _ core.JobDeleter = (*Backend)(nil)

// DeleteJob deletes one job with its runs, checkpoints, result, index
// entries and idempotency key, in one script call on its queue. A running
// job is refused with core.ErrInvalidState unless force is set; with force
// its lease goes with it, so its worker's next fenced call fails with
// core.ErrLeaseLost. A missing job gives core.ErrNotFound. See
// core.JobDeleter.
func (b *Backend) DeleteJob(ctx context.Context, jobID string, force bool) error {
	f := "0"
	if force {
		f = "1"
	}
	if _, _, err := b.jobCall(ctx, "delete job", scriptDeleteJob, jobID, f); err != nil {
		return err
	}
	b.unmap(ctx, jobID)
	return nil
}

// unmap drops deleted jobs from the id map. A leftover entry only maps an
// id that has no job (every call by id then finds none), so a failure is
// logged, not returned: the jobs are deleted either way.
func (b *Backend) unmap(ctx context.Context, ids ...string) {
	for _, id := range ids {
		b.forget(id)
	}
	if len(ids) == 0 {
		return
	}
	if err := b.rdb.HDel(context.WithoutCancel(ctx), b.ks.jobQueue(), ids...).Err(); err != nil {
		b.opts.Logger.Warn("redisq: deleted jobs keep their id map entries", "jobs", len(ids), "err", err)
	}
}

// DeleteQueue runs one bounded step of deleting a queue: one script call
// deletes up to req.Limit of its jobs in any state, each with everything it
// owns as DeleteJob with force does, and, once none is left, the queue's
// config, paused flag, run statistics and job counts. Parts of cross-slot
// batches still being committed are left to finish; their jobs are deleted
// by a later step. The queue stays in the registry of queues, which lists
// every queue that ever had a job or a config (ListQueues leaves out those
// with neither). See core.JobDeleter.
func (b *Backend) DeleteQueue(ctx context.Context, req core.DeleteQueueRequest) (core.DeleteQueueResult, error) {
	var out core.DeleteQueueResult
	if err := b.check("delete queue"); err != nil {
		return out, err
	}
	if err := core.ValidateDeleteQueue(req, b.opts.Limits); err != nil {
		return out, err
	}
	res, err := b.run(ctx, scriptDeleteQ, req.Queue, req.Limit)
	if err != nil {
		return out, wrap("delete queue", err)
	}
	status, rest, err := reply(res, map[string]int{"ok": 1})
	if err != nil {
		return out, err
	}
	if status != "ok" {
		return out, fmt.Errorf("redisq: delete queue: unexpected reply %q", status)
	}
	ids := make([]string, 0, len(rest)-1)
	for _, v := range rest[1:] {
		s, _ := str(v)
		ids = append(ids, s)
	}
	b.unmap(ctx, ids...)
	out.Deleted = len(ids)
	out.Done = toInt(rest[0]) == 1
	return out, nil
}
