package redisq

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/boson-go/boson/core"
	"github.com/redis/go-redis/v9"
)

// enqueueGroup is the part of a batch that goes to one queue.
type enqueueGroup struct {
	queue string
	items []int // indexes into the batch
}

// taskLimit carries a task's limits and its counts in queues outside the
// script call into the enqueue script.
type taskLimit struct {
	maxInFlight, maxPerSecond int
	otherInFlight, otherRate  int64
}

// Enqueue stores a batch atomically. See core.QueueBackend. A batch whose
// queues all live in one slot (every batch on a single node) is one script
// call; on a cluster, a batch over queues in different slots is committed in
// two phases (see enqueueSharded and the package documentation).
func (b *Backend) Enqueue(ctx context.Context, reqs []core.EnqueueRequest) ([]core.EnqueueResult, error) {
	if err := b.check("enqueue"); err != nil {
		return nil, err
	}
	goNow := time.Now().UTC()
	if b.opts.Clock != nil {
		goNow = b.opts.Clock.Now().UTC()
	}
	jobs, err := core.PrepareJobs(reqs, goNow, b.opts.Limits)
	if err != nil {
		return nil, err
	}
	var groups []*enqueueGroup
	byQueue := map[string]*enqueueGroup{}
	var tasks []string
	seenTask := map[string]bool{}
	for i, j := range jobs {
		g := byQueue[j.Queue]
		if g == nil {
			g = &enqueueGroup{queue: j.Queue}
			byQueue[j.Queue] = g
			groups = append(groups, g)
		}
		g.items = append(g.items, i)
		if !seenTask[j.Task] {
			seenTask[j.Task] = true
			tasks = append(tasks, j.Task)
		}
	}

	// One round trip to the {prefix} slot: task configs, the id -> queue
	// map and the queue registry. The map is written before the jobs so that
	// a stored job can always be found by id.
	pipe := b.rdb.Pipeline()
	cfgCmd := pipe.HMGet(ctx, b.ks.tasks(), tasks...)
	idq := make([]any, 0, 2*len(jobs))
	for _, j := range jobs {
		idq = append(idq, j.ID, j.Queue)
	}
	pipe.HSet(ctx, b.ks.jobQueue(), idq...)
	// The queue registry is written on every enqueue, not once per
	// process: after a restart that lost data it must be rebuilt by the
	// next enqueue, or Rescue would no longer visit the queue.
	qs := make([]any, 0, len(groups))
	for _, g := range groups {
		qs = append(qs, g.queue)
	}
	pipe.SAdd(ctx, b.ks.queues(), qs...)
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, wrap("enqueue", err)
	}
	undo := func() {
		ids := make([]string, len(jobs))
		for i, j := range jobs {
			ids[i] = j.ID
		}
		// Best effort: a leftover entry only maps an id that has no job.
		_ = b.rdb.HDel(context.WithoutCancel(ctx), b.ks.jobQueue(), ids...).Err()
	}

	limits := map[string]*taskLimit{}
	for i, v := range cfgCmd.Val() {
		s, ok := str(v)
		if !ok {
			continue
		}
		var cfg core.TaskConfig
		if err := json.Unmarshal([]byte(s), &cfg); err != nil {
			undo()
			return nil, fmt.Errorf("redisq: enqueue: task config %q: %w", tasks[i], err)
		}
		if cfg.MaxInFlight > 0 || cfg.MaxEnqueuePerSecond > 0 {
			limits[tasks[i]] = &taskLimit{maxInFlight: cfg.MaxInFlight, maxPerSecond: cfg.MaxEnqueuePerSecond}
		}
	}
	if len(limits) > 0 {
		all, err := b.rdb.SMembers(ctx, b.ks.queues()).Result()
		if err != nil {
			undo()
			return nil, wrap("enqueue", err)
		}
		if err := b.countElsewhere(ctx, limits, all, byQueue); err != nil {
			undo()
			return nil, err
		}
	}

	itemArgs := func(gi int, i int) []any {
		j := jobs[i]
		var headers, retry string
		if len(j.Headers) > 0 {
			h, _ := json.Marshal(j.Headers)
			headers = string(h)
		}
		if !j.Retry.IsZero() {
			r, _ := json.Marshal(j.Retry)
			retry = string(r)
		}
		ra := "0"
		if j.RunAt.After(goNow) {
			ra = micros(j.RunAt)
		}
		dl := "0"
		if j.Cancel.MaxDelay > 0 {
			dl = strconv.FormatInt(durMicros(j.Cancel.MaxDelay), 10)
		}
		return []any{gi, j.ID, j.Task, packCold(j, headers, retry), packRecord(j), ra,
			j.IdempotencyKey, j.Fingerprint, dl, readyPrefix(j.Priority), flowArg(j)}
	}
	// buildArgs lays out the ARGV of one script call over groups gs (see
	// luaEnqueue for the mode and the batch values).
	buildArgs := func(gs []*enqueueGroup, c enqueueMode, elsewhere func(task string, own []*enqueueGroup) (int64, int64)) ([]string, []any) {
		var keys []string
		args := []any{b.nowArg(), "", c.mode, c.batch, c.info, c.commitBy, len(gs)}
		for _, g := range gs {
			keys = append(keys, b.ks.keysOf(g.queue, scriptEnqueue.keys)...)
			args = append(args, b.ks.channel(g.queue))
		}
		args = append(args, len(limits))
		for task, l := range limits {
			oif, orate := elsewhere(task, gs)
			args = append(args, task, l.maxInFlight, l.maxPerSecond, oif, orate)
		}
		n := 0
		for _, g := range gs {
			n += len(g.items)
		}
		args = append(args, n)
		for gi, g := range gs {
			for _, i := range g.items {
				args = append(args, itemArgs(gi+1, i)...)
			}
		}
		return keys, args
	}
	plain := func(task string, _ []*enqueueGroup) (int64, int64) {
		l := limits[task]
		return l.otherInFlight, l.otherRate
	}

	var wait time.Duration
	for {
		var replies [][]any // per script call: the per-item reply values
		var calls [][]*enqueueGroup
		stored := false // an error may leave the batch stored (or about to be)
		if !b.sharded || len(groups) == 1 {
			keys, args := buildArgs(groups, enqueueMode{mode: "w"}, plain)
			var vals []any
			vals, err = b.enqueueCall(ctx, keys, args, jobs, groups)
			stored = err != nil && !refused(err)
			replies, calls = append(replies, vals), append(calls, groups)
		} else {
			replies, calls, stored, err = b.enqueueSharded(ctx, groups, jobs, limits, buildArgs)
		}
		var pb *pendingBatch
		if errors.As(err, &pb) {
			// An item's idempotency key is held by another cross-slot batch
			// that is not decided yet: help settle it, then try again.
			if err := b.settleFor(ctx, pb, &wait); err != nil {
				undo()
				return nil, err
			}
			continue
		}
		if err != nil {
			if !stored {
				undo()
			}
			return nil, err
		}
		return b.enqueueResults(ctx, jobs, goNow, replies, calls)
	}
}

// enqueueMode is the mode of an enqueue script call and its batch values
// (see luaEnqueue).
type enqueueMode struct {
	mode, batch, info, commitBy string
}

// errBatchAborted: the commit of a cross-slot batch came after a Rescue or
// a waiting enqueue had aborted the batch, or too long after its parts were
// prepared.
var errBatchAborted = errors.New("redisq: enqueue: batch aborted before its commit (its prepared parts waited past the batch timeout); nothing was stored")

// pendingBatch reports that an idempotency key an item needs is reserved
// by the prepared part of another cross-slot batch, not decided yet. The
// call that returns it wrote nothing.
type pendingBatch struct {
	queue, batch, meta string
}

func (e *pendingBatch) Error() string {
	return fmt.Sprintf("redisq: enqueue: an idempotency key of queue %q is held by batch %s, not decided yet", e.queue, e.batch)
}

// refused reports whether an enqueue script call ran and refused, which
// means that it wrote nothing.
func refused(err error) bool {
	var pb *pendingBatch
	return errors.Is(err, core.ErrIdempotencyConflict) || errors.Is(err, core.ErrRateLimited) ||
		errors.Is(err, errBatchAborted) || errors.As(err, &pb)
}

// enqueueCall runs one enqueue script call and turns refusals into errors.
func (b *Backend) enqueueCall(ctx context.Context, keys []string, args []any, jobs []core.Job, gs []*enqueueGroup) ([]any, error) {
	res, err := b.eval(ctx, scriptEnqueue, keys, args...)
	if err != nil {
		return nil, wrap("enqueue", err)
	}
	n := 0
	for _, g := range gs {
		n += len(g.items)
	}
	status, rest, err := reply(res, map[string]int{"ok": 1 + n, "conflict": 1, "limited": 2, "pending": 3})
	if err != nil {
		return nil, err
	}
	item := func(v any) (int, error) {
		pos := int(toInt(v)) - 1
		var order []int
		for _, g := range gs {
			order = append(order, g.items...)
		}
		if pos < 0 || pos >= len(order) {
			return 0, fmt.Errorf("redisq: enqueue: %s reply names item %d of %d", status, pos+1, len(order))
		}
		return order[pos], nil
	}
	switch status {
	case "ok":
		return rest, nil
	case "conflict":
		idx, err := item(rest[0])
		if err != nil {
			return nil, err
		}
		return nil, &core.BatchError{Index: idx, Err: fmt.Errorf("%w: queue %q already holds idempotency key %q for a different request",
			core.ErrIdempotencyConflict, jobs[idx].Queue, jobs[idx].IdempotencyKey)}
	case "limited":
		task, _ := str(rest[0])
		which, _ := str(rest[1])
		return nil, fmt.Errorf("redisq: enqueue: %w: task %q would exceed its %s", core.ErrRateLimited, task, which)
	case "pending":
		idx, err := item(rest[0])
		if err != nil {
			return nil, err
		}
		batch, _ := str(rest[1])
		meta, _ := str(rest[2])
		return nil, &pendingBatch{queue: jobs[idx].Queue, batch: batch, meta: meta}
	case "aborted":
		return nil, errBatchAborted
	}
	return nil, fmt.Errorf("redisq: enqueue: unexpected reply %q", status)
}

// countElsewhere fills each limit's counts from the queues outside the
// batch. These reads are not atomic with the enqueue script: across queues
// a limit is enforced as closely as concurrent enqueues allow.
func (b *Backend) countElsewhere(ctx context.Context, limits map[string]*taskLimit, all []string, inBatch map[string]*enqueueGroup) error {
	var others []string
	for _, q := range all {
		if inBatch[q] == nil {
			others = append(others, q)
		}
	}
	if len(others) == 0 {
		return nil
	}
	now, err := b.now(ctx)
	if err != nil {
		return err
	}
	lo := now.UnixMicro() - int64(time.Second/time.Microsecond) + 1
	lo = max(lo, 0)
	los := fmt.Sprintf("%018d", lo)
	type cmds struct {
		l        *taskLimit
		inflight *redis.SliceCmd
		rate     *redis.StringSliceCmd
	}
	var all2 []cmds
	pipe := b.rdb.Pipeline()
	for task, l := range limits {
		for _, q := range others {
			keys := b.ks.queueKeys(q)
			c := cmds{l: l}
			c.inflight = pipe.HMGet(ctx, keys[kCnt], task+"|"+string(core.StateQueued), task+"|"+string(core.StateRunning),
				task+"|"+string(core.StateSleeping), task+"|pending")
			c.rate = pipe.ZRangeByLex(ctx, keys[kRate], &redis.ZRangeBy{Min: "[" + task + "|" + los, Max: "(" + task + "}"})
			all2 = append(all2, c)
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return wrap("enqueue: count limits", err)
	}
	for _, c := range all2 {
		for _, v := range c.inflight.Val() {
			c.l.otherInFlight += toInt(v)
		}
		c.l.otherRate += rateCount(c.rate.Val())
	}
	return nil
}

// enqueueResults turns the scripts' replies into results, reading the jobs
// that idempotency keys reused. A reply whose time is nil stands for a
// part of a cross-slot batch that a Rescue stored first: its new jobs are
// read back too.
func (b *Backend) enqueueResults(ctx context.Context, jobs []core.Job, goNow time.Time, replies [][]any, calls [][]*enqueueGroup) ([]core.EnqueueResult, error) {
	out := make([]core.EnqueueResult, len(jobs))
	byID := map[string]int{}
	reused := map[int]string{}
	var stale []int
	for c, gs := range calls {
		vals := replies[c]
		now := toTime(vals[0])
		pos := 1
		for _, g := range gs {
			for _, i := range g.items {
				j := jobs[i]
				if rid, _ := str(vals[pos]); rid != "" {
					reused[i] = rid
				} else if vals[0] == nil {
					stale = append(stale, i)
				} else {
					j.CreatedAt = now
					if !j.RunAt.After(goNow) || j.RunAt.Before(now) {
						j.RunAt = now
					}
					j.Payload = bytes.Clone(j.Payload)
					j.Headers = maps.Clone(j.Headers)
					if len(j.Headers) == 0 {
						j.Headers = nil
					}
					if len(j.Payload) == 0 {
						j.Payload = nil
					}
					out[i] = core.EnqueueResult{Job: j}
					byID[j.ID] = i
				}
				pos++
			}
		}
	}
	if len(reused) == 0 && len(stale) == 0 {
		return out, nil
	}
	type read struct {
		i      int
		id     string
		reused bool
	}
	var fetch []read
	for _, i := range stale {
		fetch = append(fetch, read{i: i, id: jobs[i].ID})
	}
	var drop []string
	for i, rid := range reused {
		drop = append(drop, jobs[i].ID)
		if k, ok := byID[rid]; ok {
			out[i] = core.EnqueueResult{Job: cloneJob(out[k].Job), Reused: true}
		} else {
			fetch = append(fetch, read{i: i, id: rid, reused: true})
		}
	}
	if len(drop) > 0 {
		_ = b.rdb.HDel(ctx, b.ks.jobQueue(), drop...).Err()
	}
	if len(fetch) > 0 {
		pipe := b.rdb.Pipeline()
		cmds := make([]*redis.SliceCmd, len(fetch))
		exps := make([]*redis.FloatCmd, len(fetch))
		for n, f := range fetch {
			keys := b.ks.queueKeys(jobs[f.i].Queue)
			cmds[n] = pipe.HMGet(ctx, keys[kJob], f.id, coldField(f.id), resultField(f.id))
			exps[n] = pipe.ZScore(ctx, keys[kLease], f.id)
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return nil, wrap("enqueue: read stored jobs", err)
		}
		for n, f := range fetch {
			v := cmds[n].Val()
			j, ok, err := decodeJob(f.id, jobs[f.i].Queue, v[0], v[1], v[2], leaseScore(exps[n]))
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, fmt.Errorf("redisq: enqueue: stored job %s was deleted meanwhile", f.id)
			}
			out[f.i] = core.EnqueueResult{Job: j, Reused: f.reused}
		}
	}
	return out, nil
}

func cloneJob(j core.Job) core.Job {
	j.Payload = bytes.Clone(j.Payload)
	j.Headers = maps.Clone(j.Headers)
	j.Result = bytes.Clone(j.Result)
	return j
}

// rateCount sums the job counts of rate set members
// ("<task>|<created µs>|<first id>|<count>").
func rateCount(members []string) int64 {
	var n int64
	for _, m := range members {
		if i := strings.LastIndexByte(m, '|'); i >= 0 {
			c, _ := strconv.ParseInt(m[i+1:], 10, 64)
			n += c
		}
	}
	return n
}

// readyPrefix is the start of a ready member, "<priority+1000>|" (4 digits).
func readyPrefix(priority int) string {
	return fmt.Sprintf("%04d|", priority+1000)
}
