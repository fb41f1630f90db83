package redisq

import (
	"context"
	"math"
	"slices"
	"strconv"

	"github.com/boson-go/boson/core"
	"github.com/redis/go-redis/v9"
)

// runningOnly reports whether statuses select running runs only, which
// only running jobs (the lease set) have, as their latest run.
func runningOnly(statuses []core.RunStatus) bool {
	if len(statuses) == 0 {
		return false
	}
	for _, s := range statuses {
		if s != core.RunRunning {
			return false
		}
	}
	return true
}

// runStream returns the jobs whose runs a run filter may select, in its
// order, at cursor job pos and after it: the one job it names, or a walk
// over the index ranges of its task or every state (for running runs
// only, the lease set, or the task's range when that is smaller).
func (b *Backend) runStream(ctx context.Context, f core.RunFilter, pos string, want int) (refStream, error) {
	if f.JobID != "" {
		q, ok, err := b.queueOf(ctx, f.JobID)
		if err != nil {
			return nil, err
		}
		var refs []jobRef
		if ok && (f.Queue == "" || f.Queue == q) {
			refs = append(refs, jobRef{id: f.JobID, queue: q})
		}
		return newRefList(refs, f.Desc, pos, true), nil
	}
	qs, err := b.scope(ctx, f.Queue)
	if err != nil {
		return nil, err
	}
	var states []core.JobState
	if runningOnly(f.Statuses) {
		states = []core.JobState{core.StateRunning}
	}
	srcs, err := b.walkSources(ctx, qs, f.Task, states)
	if err != nil {
		return nil, err
	}
	return b.newJobWalk(srcs, "", f.Desc, pos, true, want), nil
}

// jobRuns returns the runs of each job of refs that match f, in token
// order (descending when desc), with Queue and Task set. A job's latest
// run is in its record; its earlier ones are read from the run hash only
// when f could select one of them: the latest run started last and the
// first at the job's first start.
func (b *Backend) jobRuns(ctx context.Context, refs []jobRef, f core.RunFilter) ([][]core.Run, error) {
	recs, err := b.records(ctx, refs)
	if err != nil {
		return nil, err
	}
	out := make([][]core.Run, len(refs))
	latestOnly := runningOnly(f.Statuses)
	pipe := b.rdb.Pipeline()
	spilled := make([]*redis.SliceCmd, len(refs))
	queued := false
	for i, r := range refs {
		v, ok := recs[r]
		if !ok || v.runCount == 0 || f.Task != "" && v.task != f.Task ||
			!f.Since.IsZero() && microTime(v.runStarted).Before(f.Since) ||
			!f.Before.IsZero() && !microTime(v.firstStarted).Before(f.Before) {
			continue
		}
		if v.runCount > 1 && !latestOnly {
			fields := make([]string, 0, v.runCount-1)
			for n := int64(1); n < v.runCount; n++ {
				fields = append(fields, r.id+"|"+strconv.FormatInt(n, 10))
			}
			spilled[i] = pipe.HMGet(ctx, b.ks.queueKeys(r.queue)[kRun], fields...)
			queued = true
		}
	}
	if queued {
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, wrap("list runs", err)
		}
	}
	for i, r := range refs {
		v, ok := recs[r]
		if !ok || v.runCount == 0 {
			continue
		}
		var runs []core.Run
		if spilled[i] != nil {
			for _, rv := range spilled[i].Val() {
				if rv == nil {
					continue // deleted meanwhile
				}
				run, err := spilledRun(r.id, rv)
				if err != nil {
					return nil, err
				}
				runs = append(runs, run)
			}
		}
		if run, ok := lastRun(r.id, v); ok {
			runs = append(runs, run)
		}
		keep := runs[:0]
		for _, run := range runs {
			run.Queue, run.Task = r.queue, v.task
			if f.Matches(run) {
				keep = append(keep, run)
			}
		}
		if f.Desc {
			slices.Reverse(keep)
		}
		out[i] = keep
	}
	return out, nil
}

// ListAllRuns returns one page of the runs matching f in (job id, token)
// order. The jobs come from the index ranges of the filter's queue and task
// (the lease set when it asks for running runs only, the one job when it
// names one); statuses and start times are matched on the runs read. A call
// reads at most pageScanBudget jobs: when that leaves the page short, Next
// continues after the last job read. See core.RunReader.
func (b *Backend) ListAllRuns(ctx context.Context, f core.RunFilter) (core.RunPage, error) {
	var page core.RunPage
	if err := b.check("list runs"); err != nil {
		return page, err
	}
	if err := core.ValidateRunFilter(f); err != nil {
		return page, err
	}
	var cj string
	var ct int64
	if f.Cursor != "" {
		cj, ct, _ = core.ParseRunID(f.Cursor)
	}
	size := f.PageSize()
	st, err := b.runStream(ctx, f, cj, size+1)
	if err != nil {
		return page, err
	}
	for read := 0; ; {
		refs, err := st.next(ctx)
		if err != nil {
			return core.RunPage{}, err
		}
		runs, err := b.jobRuns(ctx, refs, f)
		if err != nil {
			return core.RunPage{}, err
		}
		for i, rs := range runs {
			for n, run := range rs {
				if run.JobID == cj && (!f.Desc && run.Token <= ct || f.Desc && run.Token >= ct) {
					continue
				}
				page.Runs = append(page.Runs, run)
				if len(page.Runs) == size {
					if !st.ended() || i < len(runs)-1 || n < len(rs)-1 {
						page.Next = run.ID
					}
					return page, nil
				}
			}
		}
		read += len(refs)
		if st.ended() {
			return page, nil
		}
		if read >= pageScanBudget {
			// past every run of the last job read
			tok := int64(math.MaxInt64)
			if f.Desc {
				tok = 1
			}
			page.Next = core.RunID(st.position(), tok)
			return page, nil
		}
	}
}

// CountRuns counts the runs matching f by status. Without a job or a start
// range it adds up counters: each queue's run statistics (closed runs by
// task and status, which deletions and cleanups take back) and its running
// jobs, each of which has exactly one open run. Otherwise it reads the runs
// as ListAllRuns does, at most countScanBudget jobs. See core.RunReader.
func (b *Backend) CountRuns(ctx context.Context, f core.RunFilter) (map[core.RunStatus]int64, error) {
	if err := b.check("count runs"); err != nil {
		return nil, err
	}
	if err := core.ValidateRunFilter(f); err != nil {
		return nil, err
	}
	f.Cursor, f.Desc = "", false
	if f.JobID == "" && f.Since.IsZero() && f.Before.IsZero() {
		return b.countRunStats(ctx, f)
	}
	out := map[core.RunStatus]int64{}
	st, err := b.runStream(ctx, f, "", countChunk)
	if err != nil {
		return nil, err
	}
	for read := 0; !st.ended(); {
		refs, err := st.next(ctx)
		if err != nil {
			return nil, err
		}
		if read += len(refs); read > countScanBudget {
			return nil, tooBroad("count runs", countScanBudget)
		}
		runs, err := b.jobRuns(ctx, refs, f)
		if err != nil {
			return nil, err
		}
		for _, rs := range runs {
			for _, r := range rs {
				out[r.Status]++
			}
		}
	}
	return out, nil
}

// countRunStats counts runs by the counters of the queues f covers, in one
// round trip.
func (b *Backend) countRunStats(ctx context.Context, f core.RunFilter) (map[core.RunStatus]int64, error) {
	out := map[core.RunStatus]int64{}
	qs, err := b.scope(ctx, f.Queue)
	if err != nil || len(qs) == 0 {
		return out, err
	}
	pipe := b.rdb.Pipeline()
	stats := make([]*redis.MapStringStringCmd, len(qs))
	running := make([]*redis.IntCmd, len(qs))
	taskRunning := make([]*redis.StringCmd, len(qs))
	for i, q := range qs {
		keys := b.ks.queueKeys(q)
		stats[i] = pipe.HGetAll(ctx, keys[kRstat])
		if f.Task != "" {
			taskRunning[i] = pipe.HGet(ctx, keys[kCnt], f.Task+"|"+string(core.StateRunning))
		} else {
			running[i] = pipe.ZCard(ctx, keys[kLease])
		}
	}
	if _, err := pipe.Exec(ctx); err != nil && !isNil(err) {
		return nil, wrap("count runs", err)
	}
	want := func(s core.RunStatus) bool { return len(f.Statuses) == 0 || slices.Contains(f.Statuses, s) }
	for i := range qs {
		for field, v := range stats[i].Val() {
			task, status := splitLast(field)
			s := core.RunStatus(status)
			if s == core.RunRunning || !s.Valid() || f.Task != "" && task != f.Task || !want(s) {
				continue
			}
			if n, _ := strconv.ParseInt(v, 10, 64); n > 0 {
				out[s] += n
			}
		}
		n := int64(0)
		if f.Task != "" {
			n, _ = strconv.ParseInt(taskRunning[i].Val(), 10, 64)
		} else {
			n = running[i].Val()
		}
		if n > 0 && want(core.RunRunning) {
			out[core.RunRunning] += n
		}
	}
	return out, nil
}

// splitLast splits "<a>|<b>" at its last '|'.
func splitLast(s string) (string, string) {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '|' {
			return s[:i], s[i+1:]
		}
	}
	return s, ""
}
