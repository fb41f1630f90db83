package redisq

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/boson-go/boson/core"
	"github.com/redis/go-redis/v9"
)

func notFound(op, id string) error {
	return fmt.Errorf("redisq: %s: job %s: %w", op, id, core.ErrNotFound)
}

// jobScript runs a script that addresses one job by id and returns
// {'ok', job}, {'notfound'} or {'state', state}.
func (b *Backend) jobScript(ctx context.Context, op string, s *luaScript, id string, args ...any) (core.Job, error) {
	q, rest, err := b.jobCall(ctx, op, s, id, args...)
	if err != nil {
		return core.Job{}, err
	}
	return decodeScriptJob(q, rest[0], nil) // no longer running
}

// jobCall runs a script that addresses one job by id and returns {'ok',
// value}, {'notfound'} or {'state', state}: it returns the job's queue and
// the values after 'ok', and turns the others into errors wrapping
// core.ErrNotFound and core.ErrInvalidState.
func (b *Backend) jobCall(ctx context.Context, op string, s *luaScript, id string, args ...any) (string, []any, error) {
	if err := b.check(op); err != nil {
		return "", nil, err
	}
	if err := core.ValidateJobID(id); err != nil {
		return "", nil, err
	}
	q, ok, err := b.queueOf(ctx, id)
	if err != nil {
		return "", nil, err
	}
	if !ok {
		return "", nil, notFound(op, id)
	}
	res, err := b.run(ctx, s, q, append([]any{id}, args...)...)
	if err != nil {
		return "", nil, wrap(op, err)
	}
	status, rest, err := reply(res, map[string]int{"ok": 1, "state": 1})
	if err != nil {
		return "", nil, err
	}
	switch status {
	case "ok":
		return q, rest, nil
	case "notfound", "conflict":
		return "", nil, refusal(op, id, status)
	case "state":
		if st, _ := str(rest[0]); st != "" {
			return "", nil, refusal(op, id, st)
		}
	}
	return "", nil, fmt.Errorf("redisq: %s: unexpected reply %q", op, status)
}

// refusal is the error of a script's refusal to change job id, as the
// transitions of luaLib (cancelone, retryone, deleteone) name it: an
// error wrapping core.ErrNotFound for "notfound", core.ErrIdempotencyConflict
// for "conflict", else core.ErrInvalidState for the state that refused it.
// It is nil for "", a job that took the action.
func refusal(op, id, why string) error {
	switch why {
	case "":
		return nil
	case "notfound":
		return notFound(op, id)
	case "conflict":
		return fmt.Errorf("redisq: %s: job %s: %w: another job holds its idempotency key", op, id, core.ErrIdempotencyConflict)
	}
	return fmt.Errorf("redisq: %s: job %s is %s: %w", op, id, why, core.ErrInvalidState)
}

// Cancel cancels a queued, sleeping or running job. See core.QueueBackend.
func (b *Backend) Cancel(ctx context.Context, jobID, reason string) (core.Job, error) {
	j, err := b.jobScript(ctx, "cancel", scriptCancel, jobID, core.CancelReason(reason))
	if err == nil {
		b.forget(jobID)
	}
	return j, err
}

// Retry queues a failed or cancelled job again. See core.QueueBackend.
func (b *Backend) Retry(ctx context.Context, jobID string) (core.Job, error) {
	return b.jobScript(ctx, "retry", scriptRetry, jobID)
}

// sortedQueues returns every registered queue, sorted.
func (b *Backend) sortedQueues(ctx context.Context) ([]string, error) {
	qs, err := b.rdb.SMembers(ctx, b.ks.queues()).Result()
	if err != nil {
		return nil, wrap("list queues", err)
	}
	slices.Sort(qs)
	return qs, nil
}

// Rescue runs one bounded pass over every queue, one script call per queue
// until the limit is spent. See core.QueueBackend.
func (b *Backend) Rescue(ctx context.Context, req core.RescueRequest) (core.RescueResult, error) {
	var out core.RescueResult
	if err := b.check("rescue"); err != nil {
		return out, err
	}
	if err := b.opts.Limits.ValidateBatch("limit", req.Limit); err != nil {
		return out, err
	}
	qs, err := b.sortedQueues(ctx)
	if err != nil {
		return out, err
	}
	qs, pend, txn, err := b.rescueScope(ctx, qs)
	if err != nil {
		return out, err
	}
	// A batch that cannot be settled now (its coordinator does not answer)
	// does not hold up the rescue of leases and deadlines.
	settleErr := b.settleBatches(ctx, pend, txn)
	for _, q := range qs {
		left := req.Limit - out.Total()
		if left <= 0 {
			break
		}
		res, err := b.run(ctx, scriptRescue, q, left)
		if err != nil {
			return out, wrap("rescue", err)
		}
		arr, _ := res.([]any)
		if len(arr) != 3 {
			return out, fmt.Errorf("redisq: rescue: unexpected reply %v", res)
		}
		out.Requeued += int(toInt(arr[0]))
		out.Failed += int(toInt(arr[1]))
		out.Cancelled += int(toInt(arr[2]))
	}
	return out, settleErr
}

// rescueScope keeps the queues that have a running job or a pending
// deadline, the only ones a rescue pass can change, and finds the queues
// that hold prepared parts or decisions of cross-slot batches, in one round
// trip, so that an idle pass costs two commands however many queues exist.
func (b *Backend) rescueScope(ctx context.Context, qs []string) (rescue, pend, txn []string, err error) {
	if len(qs) == 0 {
		return nil, nil, nil, nil
	}
	pipe := b.rdb.Pipeline()
	cmds := make([][4]*redis.IntCmd, len(qs))
	for i, q := range qs {
		keys := b.ks.queueKeys(q)
		cmds[i] = [4]*redis.IntCmd{pipe.ZCard(ctx, keys[kLease]), pipe.ZCard(ctx, keys[kDead]), pipe.HLen(ctx, keys[kPend]), pipe.HLen(ctx, keys[kTxn])}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, nil, nil, wrap("rescue", err)
	}
	for i, q := range qs {
		if cmds[i][0].Val() > 0 || cmds[i][1].Val() > 0 {
			rescue = append(rescue, q)
		}
		if cmds[i][2].Val() > 0 {
			pend = append(pend, q)
		}
		if cmds[i][3].Val() > 0 {
			txn = append(txn, q)
		}
	}
	return rescue, pend, txn, nil
}

// Cleanup deletes old terminal jobs, oldest finished first. See
// core.QueueBackend.
func (b *Backend) Cleanup(ctx context.Context, req core.CleanupRequest) (int, error) {
	if err := b.check("cleanup"); err != nil {
		return 0, err
	}
	if err := core.ValidateCleanup(req, b.opts.Limits); err != nil {
		return 0, err
	}
	qs := []string{req.Queue}
	if req.Queue == "" {
		var err error
		if qs, err = b.sortedQueues(ctx); err != nil {
			return 0, err
		}
	}
	before := req.FinishedBefore.UnixMicro()
	type cand struct {
		queue, id string
		at        float64
	}
	var cands []cand
	pipe := b.rdb.Pipeline()
	cmds := make([]*redis.ZSliceCmd, len(qs))
	for i, q := range qs {
		cmds[i] = pipe.ZRangeByScoreWithScores(ctx, b.ks.queueKeys(q)[kDone], &redis.ZRangeBy{
			Min: "-inf", Max: "(" + strconv.FormatInt(before, 10), Count: int64(req.Limit),
		})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, wrap("cleanup", err)
	}
	for i, c := range cmds {
		for _, z := range c.Val() {
			id, _ := z.Member.(string)
			cands = append(cands, cand{queue: qs[i], id: id, at: z.Score})
		}
	}
	slices.SortFunc(cands, func(a, b cand) int {
		if a.at != b.at {
			if a.at < b.at {
				return -1
			}
			return 1
		}
		if a.id < b.id {
			return -1
		}
		if a.id > b.id {
			return 1
		}
		return 0
	})
	if len(cands) > req.Limit {
		cands = cands[:req.Limit]
	}
	byQueue := map[string][]any{}
	for _, c := range cands {
		byQueue[c.queue] = append(byQueue[c.queue], c.id)
	}
	deleted := 0
	for _, q := range qs {
		ids := byQueue[q]
		if len(ids) == 0 {
			continue
		}
		res, err := b.run(ctx, scriptCleanup, q, append([]any{before}, ids...)...)
		if err != nil {
			return deleted, wrap("cleanup", err)
		}
		arr, _ := res.([]any)
		gone := make([]string, 0, len(arr))
		for _, v := range arr {
			s, _ := str(v)
			gone = append(gone, s)
			b.forget(s)
		}
		if len(gone) > 0 {
			if err := b.rdb.HDel(ctx, b.ks.jobQueue(), gone...).Err(); err != nil {
				return deleted + len(gone), wrap("cleanup", err)
			}
		}
		deleted += len(gone)
	}
	return deleted, nil
}
