package redisq

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/boson-go/boson/core"
	"github.com/redis/go-redis/v9"
)

// Bounds of the listings and counts whose filters no index answers. A
// listing reads at most pageScanBudget candidate jobs per call, and a
// search that matches headers at most scanBytesBudget of their payloads and
// results; it then returns a short page (possibly empty) with a cursor
// after the last candidate it read. A count reads at most countScanBudget
// candidates and countScanBytes of payloads and results, and otherwise
// refuses with core.ErrInvalidArgument. A listing reads its page size plus
// one entries per index range and round trip (at most scanChunk), a count
// countChunk, and whole jobs (unless its ranges select exactly) at most
// probeChunk per round trip.
// Tests lower them.
var (
	pageScanBudget  = 10000
	scanBytesBudget = 32 << 20
	countScanBudget = 200000
	countScanBytes  = 256 << 20
	scanChunk       = core.MaxPageSize + 1
	countChunk      = 256
	probeChunk      = 200
)

// perQueueTx sends the commands fill queues for each queue of qs in one
// MULTI/EXEC per queue (all queues in one on a single node), so that what
// they read of a queue is its state at one instant: a job that changes
// state between two index ranges read in one round is in exactly one of
// them. On a cluster the queues' transactions run side by side.
func (b *Backend) perQueueTx(ctx context.Context, qs []string, fill func(pipe redis.Pipeliner, q string)) error {
	if !b.sharded {
		_, err := b.rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
			for _, q := range qs {
				fill(pipe, q)
			}
			return nil
		})
		return err
	}
	errs := make([]error, len(qs))
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i, q := range qs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			_, errs[i] = b.rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
				fill(pipe, q)
				return nil
			})
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func isNil(err error) bool { return errors.Is(err, redis.Nil) }

// jobRef names one job: its id and its queue.
type jobRef struct{ id, queue string }

// jobSource is one index range of one queue: the index entries under
// prefix, or the lease set's ids for runningPrefix.
type jobSource struct {
	queue, prefix string
}

// jobWalk lists the ids of the jobs of its sources in id order, descending
// when desc, a chunk per source and round trip, merged across sources: a
// round returns only ids up to the last one of the source that reached
// furthest the least (the horizon), since a source that filled its chunk
// may hold smaller ids than other sources' last ones. Positions are ids, so
// the ids a walk returns strictly grow (or shrink), and a listing that
// pages by them returns every job at most once; a job that keeps its place
// in an index is returned exactly once.
type jobWalk struct {
	b      *Backend
	srcs   []*jobSource
	desc   bool
	pos    string // the walk continues after it (at it when incl)
	incl   bool
	prefix string // only ids with this prefix
	chunk  int    // entries per range and round
	done   bool
}

// newJobWalk walks the jobs of the index ranges srcs, with ids starting
// with idPrefix, after pos (at pos when incl), reading up to want entries
// per range and round (at least 16, at most scanChunk).
func (b *Backend) newJobWalk(srcs []*jobSource, idPrefix string, desc bool, pos string, incl bool, want int) *jobWalk {
	return &jobWalk{b: b, srcs: srcs, desc: desc, pos: pos, incl: incl, prefix: idPrefix, chunk: min(max(want, 16), scanChunk)}
}

// walkSources returns the index ranges that hold a selection in each queue
// of qs: the task's entries, or one range per state (running: the lease
// set), every state when there are none. With both a task and states it
// takes, per queue, whichever holds fewer entries, counted in one round
// trip; the records read filter out the rest.
func (b *Backend) walkSources(ctx context.Context, qs []string, task string, states []core.JobState) ([]*jobSource, error) {
	if len(states) == 0 {
		states = core.AllStates
	}
	states = uniqueStates(states)
	var statePs []string
	for _, s := range states {
		statePs = append(statePs, "s|"+string(s)+"|")
	}
	taskP := "k|" + task + "|"
	var out []*jobSource
	add := func(q string, ps ...string) {
		for _, p := range ps {
			out = append(out, &jobSource{queue: q, prefix: p})
		}
	}
	if task == "" || len(states) == len(core.AllStates) {
		for _, q := range qs {
			if task != "" {
				add(q, taskP)
			} else {
				add(q, statePs...)
			}
		}
		return out, nil
	}
	pipe := b.rdb.Pipeline()
	taskN := make([]*redis.IntCmd, len(qs))
	stateN := make([][]*redis.IntCmd, len(qs))
	for i, q := range qs {
		keys := b.ks.queueKeys(q)
		taskN[i] = pipe.ZLexCount(ctx, keys[kIdx], "["+taskP, "("+upper(taskP))
		for _, p := range statePs {
			if p == runningPrefix {
				stateN[i] = append(stateN[i], pipe.ZCard(ctx, keys[kLease]))
			} else {
				stateN[i] = append(stateN[i], pipe.ZLexCount(ctx, keys[kIdx], "["+p, "("+upper(p)))
			}
		}
	}
	if len(qs) > 0 {
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, wrap("list jobs", err)
		}
	}
	for i, q := range qs {
		var inStates int64
		for _, c := range stateN[i] {
			inStates += c.Val()
		}
		if inStates < taskN[i].Val() {
			add(q, statePs...)
		} else {
			add(q, taskP)
		}
	}
	return out, nil
}

// after reports whether id lies past the walk's position in its order.
func (w *jobWalk) after(id string) bool {
	switch {
	case w.pos == "":
		return true
	case w.incl && id == w.pos:
		return true
	case w.desc:
		return id < w.pos
	}
	return id > w.pos
}

// lexRange is the range of index entries under p that the next chunk reads.
func (w *jobWalk) lexRange(p string) *redis.ZRangeBy {
	lo, hi := "["+p+w.prefix, "("+upper(p)
	if w.prefix != "" {
		hi = "(" + p + w.prefix + "\xff"
	}
	if w.pos != "" {
		at := "("
		if w.incl {
			at = "["
		}
		if w.desc {
			if w.prefix == "" || w.pos < w.prefix+"\xff" {
				hi = at + p + w.pos
			}
		} else if w.pos >= w.prefix {
			lo = at + p + w.pos
		}
	}
	return &redis.ZRangeBy{Min: lo, Max: hi, Count: int64(w.chunk)}
}

// next returns the next jobs of the walk in its order; none once it ended.
func (w *jobWalk) next(ctx context.Context) ([]jobRef, error) {
	if w.done || len(w.srcs) == 0 {
		w.done = true
		return nil, nil
	}
	byQueue := map[string][]int{}
	var qs []string
	for i, s := range w.srcs {
		if byQueue[s.queue] == nil {
			qs = append(qs, s.queue)
		}
		byQueue[s.queue] = append(byQueue[s.queue], i)
	}
	cmds := make([]*redis.StringSliceCmd, len(w.srcs))
	err := w.b.perQueueTx(ctx, qs, func(pipe redis.Pipeliner, q string) {
		keys := w.b.ks.queueKeys(q)
		for _, i := range byQueue[q] {
			switch p := w.srcs[i].prefix; {
			case p == runningPrefix:
				cmds[i] = pipe.ZRange(ctx, keys[kLease], 0, -1)
			case w.desc:
				cmds[i] = pipe.ZRevRangeByLex(ctx, keys[kIdx], w.lexRange(p))
			default:
				cmds[i] = pipe.ZRangeByLex(ctx, keys[kIdx], w.lexRange(p))
			}
		}
	})
	if err != nil {
		return nil, wrap("list jobs", err)
	}
	got := make([][]string, len(w.srcs))
	for i, s := range w.srcs {
		if s.prefix == runningPrefix {
			// the lease set is scored by expiry: read whole every round
			// (it holds one id per running job) and ordered here
			lease := cmds[i].Val()
			slices.Sort(lease)
			if w.desc {
				slices.Reverse(lease)
			}
			var ids []string
			for _, id := range lease {
				if len(ids) == w.chunk {
					break
				}
				if w.after(id) && strings.HasPrefix(id, w.prefix) {
					ids = append(ids, id)
				}
			}
			got[i] = ids
			continue
		}
		ms := cmds[i].Val()
		ids := make([]string, len(ms))
		for n, m := range ms {
			ids[n] = m[len(s.prefix):]
		}
		got[i] = ids
	}
	// the horizon: the least advanced last id of a source that filled its
	// chunk; past it, a full source may hold ids not read yet
	horizon, bounded := "", false
	for _, ids := range got {
		if len(ids) < w.chunk {
			continue
		}
		last := ids[len(ids)-1]
		if !bounded || (!w.desc && last < horizon) || (w.desc && last > horizon) {
			horizon, bounded = last, true
		}
	}
	var out []jobRef
	seen := map[jobRef]bool{}
	for i, ids := range got {
		for _, id := range ids {
			if bounded && ((!w.desc && id > horizon) || (w.desc && id < horizon)) {
				break
			}
			r := jobRef{id: id, queue: w.srcs[i].queue}
			if !seen[r] {
				seen[r] = true
				out = append(out, r)
			}
		}
	}
	slices.SortFunc(out, func(a, b jobRef) int {
		if c := strings.Compare(a.id, b.id); c != 0 {
			if w.desc {
				return -c
			}
			return c
		}
		return strings.Compare(a.queue, b.queue)
	})
	if !bounded {
		w.done = true
	} else {
		w.pos, w.incl = horizon, false
	}
	return out, nil
}

// records reads the records of refs, one HMGET per queue in one round
// trip; a job deleted meanwhile is absent from the result.
func (b *Backend) records(ctx context.Context, refs []jobRef) (map[jobRef]record, error) {
	byQueue := map[string][]string{}
	for _, r := range refs {
		byQueue[r.queue] = append(byQueue[r.queue], r.id)
	}
	pipe := b.rdb.Pipeline()
	cmds := map[string]*redis.SliceCmd{}
	for q, ids := range byQueue {
		cmds[q] = pipe.HMGet(ctx, b.ks.queueKeys(q)[kJob], ids...)
	}
	out := make(map[jobRef]record, len(refs))
	if len(cmds) == 0 {
		return out, nil
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, wrap("read jobs", err)
	}
	for q, c := range cmds {
		for i, v := range c.Val() {
			if v == nil {
				continue
			}
			id := byQueue[q][i]
			rec, err := parseRecord(id, v)
			if err != nil {
				return nil, err
			}
			out[jobRef{id: id, queue: q}] = rec
		}
	}
	return out, nil
}

// loadJobs reads whole jobs (record, cold field, result, lease expiry) in
// one round trip; a job deleted meanwhile is absent from the result. It
// also returns the bytes of payloads and results it read.
func (b *Backend) loadJobs(ctx context.Context, refs []jobRef) (map[jobRef]core.Job, int, error) {
	out := make(map[jobRef]core.Job, len(refs))
	if len(refs) == 0 {
		return out, 0, nil
	}
	pipe := b.rdb.Pipeline()
	cmds := make([]*redis.SliceCmd, len(refs))
	exps := make([]*redis.FloatCmd, len(refs))
	for i, r := range refs {
		keys := b.ks.queueKeys(r.queue)
		cmds[i] = pipe.HMGet(ctx, keys[kJob], r.id, coldField(r.id), resultField(r.id))
		exps[i] = pipe.ZScore(ctx, keys[kLease], r.id)
	}
	if _, err := pipe.Exec(ctx); err != nil && !isNil(err) {
		return nil, 0, wrap("read jobs", err)
	}
	size := 0
	for i, r := range refs {
		v := cmds[i].Val()
		j, ok, err := decodeJob(r.id, r.queue, v[0], v[1], v[2], leaseScore(exps[i]))
		if err != nil {
			return nil, 0, err
		}
		if ok {
			out[r] = j
			size += len(j.Payload) + len(j.Result)
		}
	}
	return out, size, nil
}
