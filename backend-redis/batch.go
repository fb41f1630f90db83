package redisq

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/boson-go/boson/core"
	"github.com/redis/go-redis/v9"
)

// BatchTimeout is how long the prepared parts of a cross-slot batch (an
// Enqueue on Redis Cluster whose queues live in different slots) may wait
// for the batch's decision. Past it, Rescue, or an enqueue that needs one
// of the part's idempotency keys, aborts the batch; its commit then refuses
// and its Enqueue fails with nothing stored. A batch is decided within its
// Enqueue call unless the client dies or loses the store in between.
const BatchTimeout = 30 * time.Second

// batchRetention is how long an abort decision is kept. A commit refuses a
// batch prepared longer than half of it ago, so a commit can never arrive
// after the decision that refused it is gone.
const batchRetention = time.Hour

// enqueueSharded stores a batch whose queues live in different slots of a
// cluster, so that no single script can cover it, in two phases:
//
//  1. Every queue but the first prepares its part: the script checks the
//     part's idempotency keys and limits, stores its items in the queue's
//     pend hash, reserves its keys and counts it against its in-flight
//     limits, and makes no job visible.
//  2. The first queue, the batch's coordinator, commits: one script checks
//     its own items, writes its jobs and records the decision "committed"
//     in the coordinator's txn hash, all or nothing. Then every prepared
//     part is applied (its jobs written, its reservations released).
//
// The commit is the single point that decides the batch. Before it, every
// failure aborts the prepared parts; a crash leaves them invisible until
// Rescue finds them undecided after BatchTimeout, records "aborted" at the
// coordinator (so the commit, if it still comes, refuses) and drops them.
// After it, a part that could not be applied is applied by the next Rescue.
// So no crash of the client or of a Redis node leaves part of the batch
// stored for good: the batch ends whole or not at all, though between the
// commit and the last apply its queues show their jobs one after another.
//
// stored reports whether an error may leave the batch stored (or about to
// be), in which case the id map must be kept.
func (b *Backend) enqueueSharded(ctx context.Context, groups []*enqueueGroup, jobs []core.Job, limits map[string]*taskLimit,
	buildArgs func([]*enqueueGroup, enqueueMode, func(string, []*enqueueGroup) (int64, int64)) ([]string, []any)) (replies [][]any, calls [][]*enqueueGroup, stored bool, err error) {
	// Limits count the batch's own items in other queues as if new.
	elsewhere := func(task string, own []*enqueueGroup) (int64, int64) {
		l := limits[task]
		extra := int64(0)
		for _, g := range groups {
			if g == own[0] {
				continue
			}
			for _, i := range g.items {
				if jobs[i].Task == task {
					extra++
				}
			}
		}
		return l.otherInFlight + extra, l.otherRate + extra
	}
	coord, parts := groups[0], groups[1:]
	batch := core.NewID(time.Now())
	names := make([]string, len(parts))
	for i, g := range parts {
		names[i] = g.queue
	}
	bg := context.WithoutCancel(ctx)
	var prepared []*enqueueGroup // parts that may hold a prepared part
	abort := func() {
		left := false
		for _, g := range prepared {
			if err := b.abortPart(bg, g.queue, batch); err != nil {
				left = true
				b.opts.Logger.Error("redisq: enqueue: dropping a prepared part of a refused batch", "queue", g.queue, "batch", batch, "err", err)
			}
		}
		if left {
			// Decide now, so that Rescue drops the rest without waiting.
			if _, err := b.decide(bg, coord.queue, batch, true); err != nil {
				b.opts.Logger.Error("redisq: enqueue: aborting a refused batch", "queue", coord.queue, "batch", batch, "err", err)
			}
		}
	}

	partVals := make([][]any, len(parts))
	at := int64(math.MaxInt64)
	for i, g := range parts {
		keys, args := buildArgs([]*enqueueGroup{g}, enqueueMode{mode: "p", batch: batch, info: coord.queue}, elsewhere)
		vals, err := b.enqueueCall(ctx, keys, args, jobs, []*enqueueGroup{g})
		if err != nil {
			if !refused(err) {
				prepared = append(prepared, g) // it may have run
			}
			abort()
			return nil, nil, false, err
		}
		prepared = append(prepared, g)
		partVals[i] = vals
		at = min(at, toTime(vals[0]).UnixMicro())
	}

	commitBy := strconv.FormatInt(at+int64(batchRetention/2/time.Microsecond), 10)
	keys, args := buildArgs([]*enqueueGroup{coord}, enqueueMode{mode: "c", batch: batch, info: strings.Join(names, ","), commitBy: commitBy}, elsewhere)
	coordVals, err := b.enqueueCall(ctx, keys, args, jobs, []*enqueueGroup{coord})
	if err != nil {
		if refused(err) {
			abort()
			return nil, nil, false, err
		}
		// The commit's outcome is unknown. Decide it now (abort unless it
		// committed), so that the batch is whole or gone when this call
		// returns, as far as the store answers.
		d, derr := b.decide(bg, coord.queue, batch, true)
		switch {
		case derr != nil:
			return nil, nil, true, err // Rescue settles it
		case d == "a":
			abort()
			return nil, nil, false, err
		}
		for _, g := range parts {
			if _, _, err := b.applyPart(bg, g.queue, batch); err != nil {
				b.opts.Logger.Error("redisq: enqueue: storing a part of a committed batch", "queue", g.queue, "batch", batch, "err", err)
			}
		}
		return nil, nil, true, err
	}

	replies, calls = [][]any{coordVals}, [][]*enqueueGroup{{coord}}
	var failed error
	for i, g := range parts {
		fresh := false
		for n := range g.items {
			if s, _ := str(partVals[i][1+n]); s == "" {
				fresh = true
			}
		}
		if fresh {
			now, gone, err := b.applyPart(bg, g.queue, batch)
			if err != nil {
				if failed == nil {
					failed = fmt.Errorf("redisq: enqueue: batch %s is committed but its part in queue %q is not stored yet (the next Rescue stores it): %w", batch, g.queue, err)
				}
				continue
			}
			if gone {
				partVals[i][0] = nil // a Rescue stored it first
			} else {
				partVals[i][0] = now
			}
		}
		replies, calls = append(replies, partVals[i]), append(calls, []*enqueueGroup{g})
	}
	if failed != nil {
		return nil, nil, true, failed
	}
	// Every part is stored: the decision has served. A leftover one (this
	// call failed) is removed by Rescue.
	_ = b.rdb.HDel(bg, b.ks.queueKeys(coord.queue)[kTxn], batch).Err()
	return replies, calls, true, nil
}

// decide reads the decision of a batch at its coordinator: "c" committed,
// "a" aborted or "none". With force, an undecided batch is aborted.
func (b *Backend) decide(ctx context.Context, coord, batch string, force bool) (string, error) {
	f := "0"
	if force {
		f = "1"
	}
	res, err := b.run(ctx, scriptDecide, coord, batch, f)
	if err != nil {
		return "", wrap("enqueue: decide batch", err)
	}
	d, _, err := reply(res, nil)
	return d, err
}

// applyPart stores the prepared part of a committed batch in queue and
// returns the script's time; gone is set when the part was already stored.
func (b *Backend) applyPart(ctx context.Context, queue, batch string) (now any, gone bool, err error) {
	res, err := b.run(ctx, scriptApply, queue, batch)
	if err != nil {
		return nil, false, wrap("enqueue: store batch part", err)
	}
	status, rest, err := reply(res, map[string]int{"ok": 1})
	if err != nil {
		return nil, false, err
	}
	if status != "ok" {
		return nil, true, nil
	}
	return rest[0], false, nil
}

// abortPart drops the prepared part of an aborted batch in queue and the
// id map entries of its jobs.
func (b *Backend) abortPart(ctx context.Context, queue, batch string) error {
	res, err := b.run(ctx, scriptAbort, queue, batch)
	if err != nil {
		return wrap("enqueue: drop batch part", err)
	}
	status, rest, err := reply(res, nil)
	if err != nil || status != "ok" || len(rest) == 0 {
		return err
	}
	ids := make([]string, len(rest))
	for i, v := range rest {
		ids[i], _ = str(v)
	}
	return wrap("enqueue: drop batch part", b.rdb.HDel(ctx, b.ks.jobQueue(), ids...).Err())
}

// partMeta parses a prepared part's "m|" value: "<coordinator>|<prepared µs>".
func partMeta(meta string) (coord string, at int64, ok bool) {
	coord, rest, ok := strings.Cut(meta, "|")
	if !ok {
		return "", 0, false
	}
	at, err := strconv.ParseInt(rest, 10, 64)
	return coord, at, err == nil
}

// settlePart moves the prepared part of batch in queue on: it is stored
// when the batch committed and dropped when it aborted, or undecided for
// longer than BatchTimeout (which aborts it). It reports whether the part
// is settled.
func (b *Backend) settlePart(ctx context.Context, queue, batch, meta string, now time.Time) (bool, error) {
	coord, at, ok := partMeta(meta)
	if !ok {
		return true, nil // the part is gone already
	}
	force := now.UnixMicro()-at > int64(BatchTimeout/time.Microsecond)
	d, err := b.decide(ctx, coord, batch, force)
	if err != nil {
		return false, err
	}
	switch d {
	case "c":
		_, _, err := b.applyPart(ctx, queue, batch)
		return err == nil, err
	case "a":
		err := b.abortPart(ctx, queue, batch)
		return err == nil, err
	}
	return false, nil
}

// settleFor helps settle the batch that holds an idempotency key an
// enqueue needs, and waits a little (growing *wait) while it is undecided.
func (b *Backend) settleFor(ctx context.Context, pb *pendingBatch, wait *time.Duration) error {
	now, err := b.now(ctx)
	if err != nil {
		return err
	}
	done, err := b.settlePart(ctx, pb.queue, pb.batch, pb.meta, now)
	if err != nil || done {
		return err
	}
	*wait = min(max(2**wait, time.Millisecond), 100*time.Millisecond)
	t := time.NewTimer(*wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("redisq: enqueue: waiting for batch %s: %w", pb.batch, ctx.Err())
	case <-t.C:
		return nil
	}
}

// settleBatches is Rescue's share of cross-slot batches: it settles the
// prepared parts held by the queues in pend (see settlePart) and removes
// the decisions kept by the queues in txn that no part needs any more.
func (b *Backend) settleBatches(ctx context.Context, pend, txn []string) error {
	if len(pend) == 0 && len(txn) == 0 {
		return nil
	}
	now, err := b.now(ctx)
	if err != nil {
		return err
	}
	for _, q := range pend {
		if err := b.settleParts(ctx, q, now); err != nil {
			return err
		}
	}
	for _, q := range txn {
		if err := b.forgetDecisions(ctx, q, now); err != nil {
			return err
		}
	}
	return nil
}

// settleParts settles every prepared part that queue q holds.
func (b *Backend) settleParts(ctx context.Context, q string, now time.Time) error {
	key := b.ks.queueKeys(q)[kPend]
	fields, err := b.rdb.HKeys(ctx, key).Result()
	if err != nil {
		return wrap("rescue: batches", err)
	}
	var metas []string
	for _, f := range fields {
		if strings.HasPrefix(f, "m|") {
			metas = append(metas, f)
		}
	}
	if len(metas) == 0 {
		return nil
	}
	vals, err := b.rdb.HMGet(ctx, key, metas...).Result()
	if err != nil {
		return wrap("rescue: batches", err)
	}
	for i, f := range metas {
		meta, _ := str(vals[i])
		if _, err := b.settlePart(ctx, q, f[2:], meta, now); err != nil {
			return err
		}
	}
	return nil
}

// forgetDecisions removes the decisions that coordinator q keeps and no
// longer needs: an abort after batchRetention (no commit of it can come
// any more), a commit once none of its participants holds a part.
func (b *Backend) forgetDecisions(ctx context.Context, q string, now time.Time) error {
	key := b.ks.queueKeys(q)[kTxn]
	all, err := b.rdb.HGetAll(ctx, key).Result()
	if err != nil {
		return wrap("rescue: batches", err)
	}
	var done []string
	for batch, v := range all {
		parts := strings.SplitN(v, "|", 3)
		if len(parts) != 3 {
			continue
		}
		at, _ := strconv.ParseInt(parts[1], 10, 64)
		age := time.Duration(now.UnixMicro()-at) * time.Microsecond
		if parts[0] == "a" {
			if age >= batchRetention {
				done = append(done, batch)
			}
			continue
		}
		if age < BatchTimeout || parts[2] == "" {
			continue
		}
		pipe := b.rdb.Pipeline()
		var held []*redis.BoolCmd
		for _, p := range strings.Split(parts[2], ",") {
			held = append(held, pipe.HExists(ctx, b.ks.queueKeys(p)[kPend], "m|"+batch))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return wrap("rescue: batches", err)
		}
		left := false
		for _, h := range held {
			left = left || h.Val()
		}
		if !left {
			done = append(done, batch)
		}
	}
	if len(done) == 0 {
		return nil
	}
	return wrap("rescue: batches", b.rdb.HDel(ctx, key, done...).Err())
}
