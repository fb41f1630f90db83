package redisq

import (
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/boson-go/boson/core"
	"github.com/redis/go-redis/v9"
)

// GetJob returns one job or an error wrapping core.ErrNotFound.
func (b *Backend) GetJob(ctx context.Context, jobID string) (core.Job, error) {
	if err := b.check("get job"); err != nil {
		return core.Job{}, err
	}
	q, ok, err := b.queueOf(ctx, jobID)
	if err != nil {
		return core.Job{}, err
	}
	if !ok {
		return core.Job{}, notFound("get job", jobID)
	}
	j, found, err := b.loadJob(ctx, "get job", q, jobID)
	if err != nil {
		return core.Job{}, err
	}
	if !found {
		return core.Job{}, notFound("get job", jobID)
	}
	return j, nil
}

// scope returns the queues a filter covers.
func (b *Backend) scope(ctx context.Context, queue string) ([]string, error) {
	if queue != "" {
		return []string{queue}, nil
	}
	return b.sortedQueues(ctx)
}

// indexPrefixes returns the index member prefixes that select a filter's
// jobs within one queue: one per state, or the task's. A filter on both
// task and states is served by scanFiltered instead.
func indexPrefixes(f core.JobFilter) []string {
	var out []string
	switch {
	case f.Task != "":
		out = append(out, "k|"+f.Task+"|")
	case len(f.States) > 0:
		for _, s := range uniqueStates(f.States) {
			out = append(out, "s|"+string(s)+"|")
		}
	default:
		for _, s := range core.AllStates {
			out = append(out, "s|"+string(s)+"|")
		}
	}
	return out
}

// runningPrefix is the index prefix of running jobs, which the index does
// not hold: the lease set has exactly the running jobs of a queue.
const runningPrefix = "s|" + string(core.StateRunning) + "|"

// afterCursor sorts ids in f's order and keeps those after f.Cursor, at
// most n of them (all when n is 0).
func afterCursor(ids []string, f core.JobFilter, n int) []string {
	slices.Sort(ids)
	if f.Desc {
		slices.Reverse(ids)
	}
	out := ids[:0]
	for _, id := range ids {
		if f.Cursor != "" && ((!f.Desc && id <= f.Cursor) || (f.Desc && id >= f.Cursor)) {
			continue
		}
		out = append(out, id)
		if n > 0 && len(out) == n {
			break
		}
	}
	return out
}

// scanFiltered returns up to want ids of one queue's jobs of task f.Task in
// one of f.States, after f.Cursor in f's order. The index has no entry per
// task and state (that would cost two more index writes per transition), so
// it walks the smaller of the task's entries and the states' entries and
// reads the records to filter them.
func (b *Backend) scanFiltered(ctx context.Context, q string, f core.JobFilter, want int) ([]string, error) {
	keys := b.ks.queueKeys(q)
	states := uniqueStates(f.States)
	pipe := b.rdb.Pipeline()
	kp := "k|" + f.Task + "|"
	taskN := pipe.ZLexCount(ctx, keys[kIdx], "["+kp, "("+upper(kp))
	stateN := make([]*redis.IntCmd, len(states))
	for i, st := range states {
		p := "s|" + string(st) + "|"
		if p == runningPrefix {
			stateN[i] = pipe.ZCard(ctx, keys[kLease])
			continue
		}
		stateN[i] = pipe.ZLexCount(ctx, keys[kIdx], "["+p, "("+upper(p))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, wrap("list jobs", err)
	}
	var inStates int64
	for _, c := range stateN {
		inStates += c.Val()
	}
	var out []string
	if inStates < taskN.Val() {
		for _, st := range states {
			ids, err := b.scanPrefix(ctx, keys, "s|"+string(st)+"|", f, want)
			if err != nil {
				return nil, err
			}
			out = append(out, ids...)
		}
		return out, nil
	}
	return b.scanPrefix(ctx, keys, kp, f, want)
}

// scanPrefix walks the index entries under prefix p after f.Cursor in f's
// order, in chunks, and keeps the ids whose record matches f, until it has
// want of them or the entries end.
func (b *Backend) scanPrefix(ctx context.Context, keys []string, p string, f core.JobFilter, want int) ([]string, error) {
	var out []string
	from := f.Cursor
	chunk := int64(max(want, 256))
	var running []string
	if p == runningPrefix {
		ids, err := b.rdb.ZRange(ctx, keys[kLease], 0, -1).Result()
		if err != nil {
			return nil, wrap("list jobs", err)
		}
		running = afterCursor(ids, f, 0)
	}
	for {
		r := &redis.ZRangeBy{Min: "[" + p, Max: "(" + upper(p), Count: chunk}
		var ms []string
		var err error
		if p == runningPrefix {
			n := min(len(running), int(chunk))
			for _, id := range running[:n] {
				ms = append(ms, p+id)
			}
			running = running[n:]
		} else if f.Desc {
			if from != "" {
				r.Max = "(" + p + from
			}
			ms, err = b.rdb.ZRevRangeByLex(ctx, keys[kIdx], r).Result()
		} else {
			if from != "" {
				r.Min = "(" + p + from
			}
			ms, err = b.rdb.ZRangeByLex(ctx, keys[kIdx], r).Result()
		}
		if err != nil {
			return nil, wrap("list jobs", err)
		}
		if len(ms) == 0 {
			return out, nil
		}
		ids := make([]string, len(ms))
		for i, m := range ms {
			ids[i] = m[len(p):]
		}
		recs, err := b.rdb.HMGet(ctx, keys[kJob], ids...).Result()
		if err != nil {
			return nil, wrap("list jobs", err)
		}
		for i, rec := range recs {
			if rec == nil {
				continue
			}
			v, err := parseRecord(ids[i], rec)
			if err != nil {
				return nil, err
			}
			if v.task == f.Task && slices.Contains(f.States, v.state) {
				out = append(out, ids[i])
				if len(out) == want {
					return out, nil
				}
			}
		}
		if int64(len(ms)) < chunk {
			return out, nil
		}
		from = ids[len(ids)-1]
	}
}

func uniqueStates(in []core.JobState) []core.JobState {
	out := slices.Clone(in)
	slices.Sort(out)
	return slices.Compact(out)
}

// upper is the exclusive upper bound of the members starting with prefix p
// (which ends in '|', above every character of a name or id).
func upper(p string) string { return p[:len(p)-1] + "}" }

// ListJobs returns one page of jobs ordered by id. See core.QueueBackend.
func (b *Backend) ListJobs(ctx context.Context, f core.JobFilter) (core.JobPage, error) {
	if err := b.check("list jobs"); err != nil {
		return core.JobPage{}, err
	}
	if err := core.ValidateJobFilter(f); err != nil {
		return core.JobPage{}, err
	}
	qs, err := b.scope(ctx, f.Queue)
	if err != nil {
		return core.JobPage{}, err
	}
	size := f.PageSize()
	type src struct {
		queue  string
		prefix string
		cmd    *redis.StringSliceCmd
		lease  bool // cmd lists the lease set, in no order
	}
	var srcs []src
	pipe := b.rdb.Pipeline()
	var refs []jobRef
	filtered := f.Task != "" && len(f.States) > 0
	for _, q := range qs {
		if filtered {
			ids, err := b.scanFiltered(ctx, q, f, size+1)
			if err != nil {
				return core.JobPage{}, err
			}
			for _, id := range ids {
				refs = append(refs, jobRef{id: id, queue: q})
			}
			continue
		}
		key := b.ks.queueKeys(q)[kIdx]
		for _, p := range indexPrefixes(f) {
			if p == runningPrefix {
				cmd := pipe.ZRange(ctx, b.ks.queueKeys(q)[kLease], 0, -1)
				srcs = append(srcs, src{queue: q, cmd: cmd, lease: true})
				continue
			}
			r := &redis.ZRangeBy{Min: "[" + p, Max: "(" + upper(p), Count: int64(size + 1)}
			var cmd *redis.StringSliceCmd
			if f.Desc {
				if f.Cursor != "" {
					r.Max = "(" + p + f.Cursor
				}
				cmd = pipe.ZRevRangeByLex(ctx, key, r)
			} else {
				if f.Cursor != "" {
					r.Min = "(" + p + f.Cursor
				}
				cmd = pipe.ZRangeByLex(ctx, key, r)
			}
			srcs = append(srcs, src{queue: q, prefix: p, cmd: cmd})
		}
	}
	if len(srcs) > 0 {
		if _, err := pipe.Exec(ctx); err != nil {
			return core.JobPage{}, wrap("list jobs", err)
		}
	}
	for _, s := range srcs {
		if s.lease {
			for _, id := range afterCursor(s.cmd.Val(), f, size+1) {
				refs = append(refs, jobRef{id: id, queue: s.queue})
			}
			continue
		}
		for _, m := range s.cmd.Val() {
			refs = append(refs, jobRef{id: m[len(s.prefix):], queue: s.queue})
		}
	}
	slices.SortFunc(refs, func(a, b jobRef) int {
		if f.Desc {
			a, b = b, a
		}
		switch {
		case a.id < b.id:
			return -1
		case a.id > b.id:
			return 1
		}
		return 0
	})
	var page core.JobPage
	if len(refs) > size {
		refs = refs[:size]
		page.Next = refs[size-1].id
	}
	if len(refs) == 0 {
		return page, nil
	}
	jobs, _, err := b.loadJobs(ctx, refs)
	if err != nil {
		return core.JobPage{}, err
	}
	for _, r := range refs {
		j, ok := jobs[r]
		if !ok || !matches(f, j) {
			continue // deleted or changed since the index was read
		}
		page.Jobs = append(page.Jobs, j)
	}
	return page, nil
}

// leaseScore returns the score of a ZSCORE of the lease set, the lease
// expiry of a running job, or nil for a job it does not hold.
func leaseScore(c *redis.FloatCmd) any {
	v, err := c.Result()
	if err != nil {
		return nil
	}
	return v
}

func matches(f core.JobFilter, j core.Job) bool {
	if f.Task != "" && j.Task != f.Task {
		return false
	}
	return len(f.States) == 0 || slices.Contains(f.States, j.State)
}

// CountJobs counts the jobs matching f by state. See core.QueueBackend.
func (b *Backend) CountJobs(ctx context.Context, f core.JobFilter) (map[core.JobState]int64, error) {
	if err := b.check("count jobs"); err != nil {
		return nil, err
	}
	if err := core.ValidateJobFilter(f); err != nil {
		return nil, err
	}
	qs, err := b.scope(ctx, f.Queue)
	if err != nil {
		return nil, err
	}
	states := core.AllStates
	if len(f.States) > 0 {
		states = uniqueStates(f.States)
	}
	counts, err := b.stateCounts(ctx, qs, f.Task, states)
	if err != nil {
		return nil, wrap("count jobs", err)
	}
	out := map[core.JobState]int64{}
	for _, c := range counts {
		for s, n := range c {
			if n > 0 {
				out[s] += n
			}
		}
	}
	return out, nil
}

// stateCounts counts, per queue, the jobs of each state (of one task when
// task is set) in one pipelined round trip.
func (b *Backend) stateCounts(ctx context.Context, qs []string, task string, states []core.JobState) ([]map[core.JobState]int64, error) {
	out := make([]map[core.JobState]int64, len(qs))
	if len(qs) == 0 {
		return out, nil
	}
	pipe := b.rdb.Pipeline()
	if task != "" {
		// A task's counts per state are kept in the queue's cnt hash.
		fields := make([]string, len(states))
		for n, s := range states {
			fields[n] = task + "|" + string(s)
		}
		cmds := make([]*redis.SliceCmd, len(qs))
		for i, q := range qs {
			cmds[i] = pipe.HMGet(ctx, b.ks.queueKeys(q)[kCnt], fields...)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, err
		}
		for i := range qs {
			out[i] = map[core.JobState]int64{}
			for n, s := range states {
				out[i][s] = toInt(cmds[i].Val()[n])
			}
		}
		return out, nil
	}
	cmds := make([][]*redis.IntCmd, len(qs))
	for i, q := range qs {
		key := b.ks.queueKeys(q)[kIdx]
		for _, s := range states {
			p := "s|" + string(s) + "|"
			if p == runningPrefix {
				cmds[i] = append(cmds[i], pipe.ZCard(ctx, b.ks.queueKeys(q)[kLease]))
				continue
			}
			cmds[i] = append(cmds[i], pipe.ZLexCount(ctx, key, "["+p, "("+upper(p)))
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	for i := range qs {
		out[i] = map[core.JobState]int64{}
		for n, s := range states {
			out[i][s] = cmds[i][n].Val()
		}
	}
	return out, nil
}

// ListRuns returns a job's runs in claim order. See core.QueueBackend.
func (b *Backend) ListRuns(ctx context.Context, jobID string) ([]core.Run, error) {
	if err := b.check("list runs"); err != nil {
		return nil, err
	}
	q, ok, err := b.queueOf(ctx, jobID)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, notFound("list runs", jobID)
	}
	keys := b.ks.queueKeys(q)
	rec, err := b.rdb.HGet(ctx, keys[kJob], jobID).Result()
	if err == redis.Nil {
		return nil, notFound("list runs", jobID)
	}
	if err != nil {
		return nil, wrap("list runs", err)
	}
	v, err := parseRecord(jobID, rec)
	if err != nil {
		return nil, err
	}
	// The record holds the latest run; earlier ones were moved to the run
	// hash as "<id>|<n>" when the next run began.
	n := int(v.runCount)
	runs := make([]core.Run, 0, n)
	if n > 1 {
		fields := make([]string, 0, n-1)
		for r := 1; r < n; r++ {
			fields = append(fields, jobID+"|"+strconv.Itoa(r))
		}
		vals, err := b.rdb.HMGet(ctx, keys[kRun], fields...).Result()
		if err != nil {
			return nil, wrap("list runs", err)
		}
		for _, rv := range vals {
			if rv == nil {
				continue // deleted by a cleanup meanwhile
			}
			run, err := spilledRun(jobID, rv)
			if err != nil {
				return nil, err
			}
			runs = append(runs, run)
		}
	}
	if run, ok := lastRun(jobID, v); ok {
		runs = append(runs, run)
	}
	return runs, nil
}

// Checkpoints returns a job's checkpoints ordered by step. See
// core.QueueBackend.
func (b *Backend) Checkpoints(ctx context.Context, jobID string) ([]core.Checkpoint, error) {
	if err := b.check("checkpoints"); err != nil {
		return nil, err
	}
	q, ok, err := b.queueOf(ctx, jobID)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, notFound("checkpoints", jobID)
	}
	keys := b.ks.queueKeys(q)
	pipe := b.rdb.Pipeline()
	exists := pipe.HExists(ctx, keys[kJob], jobID)
	steps := pipe.ZRangeByLex(ctx, keys[kCpx], &redis.ZRangeBy{Min: "[" + jobID + "|", Max: "(" + jobID + "}"})
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, wrap("checkpoints", err)
	}
	if !exists.Val() {
		return nil, notFound("checkpoints", jobID)
	}
	out := []core.Checkpoint{}
	if len(steps.Val()) == 0 {
		return out, nil
	}
	var fields []string
	for _, s := range steps.Val() {
		fields = append(fields, s+"|v", s+"|c")
	}
	vals, err := b.rdb.HMGet(ctx, keys[kCp], fields...).Result()
	if err != nil {
		return nil, wrap("checkpoints", err)
	}
	for i, s := range steps.Val() {
		v, _ := str(vals[2*i])
		out = append(out, core.Checkpoint{JobID: jobID, Step: s[len(jobID)+1:], Value: []byte(v), CreatedAt: toTime(vals[2*i+1])})
	}
	return out, nil
}

// TaskStats aggregates one task's jobs and runs over every queue. See
// core.QueueBackend.
func (b *Backend) TaskStats(ctx context.Context, task string) (core.TaskStats, error) {
	out := core.TaskStats{Task: task, Jobs: map[core.JobState]int64{}, Runs: map[core.RunStatus]int64{}}
	if err := b.check("task stats"); err != nil {
		return out, err
	}
	if err := core.ValidateName("task", task); err != nil {
		return out, err
	}
	qs, err := b.sortedQueues(ctx)
	if err != nil {
		return out, err
	}
	counts, err := b.stateCounts(ctx, qs, task, core.AllStates)
	if err != nil {
		return out, wrap("task stats", err)
	}
	for _, c := range counts {
		for s, n := range c {
			if n > 0 {
				out.Jobs[s] += n
			}
		}
	}
	fields := make([]string, 0, len(core.AllRunStatuses)+1)
	for _, s := range core.AllRunStatuses {
		fields = append(fields, task+"|"+string(s))
	}
	fields = append(fields, task+"|rt")
	pipe := b.rdb.Pipeline()
	cmds := make([]*redis.SliceCmd, len(qs))
	for i, q := range qs {
		cmds[i] = pipe.HMGet(ctx, b.ks.queueKeys(q)[kRstat], fields...)
	}
	if len(qs) > 0 {
		if _, err := pipe.Exec(ctx); err != nil {
			return out, wrap("task stats", err)
		}
	}
	for _, c := range cmds {
		v := c.Val()
		for n, s := range core.AllRunStatuses {
			if x := toInt(v[n]); x > 0 {
				out.Runs[s] += x
			}
		}
		out.RunTime += time.Duration(toInt(v[len(v)-1])) * time.Microsecond
	}
	// Every running job has exactly one open run, and no other run is open.
	delete(out.Runs, core.RunRunning)
	if n := out.Jobs[core.StateRunning]; n > 0 {
		out.Runs[core.RunRunning] = n
	}
	return out, nil
}

// ListQueues describes every queue that has jobs or a stored config. See
// core.QueueBackend.
func (b *Backend) ListQueues(ctx context.Context) ([]core.QueueInfo, error) {
	if err := b.check("list queues"); err != nil {
		return nil, err
	}
	qs, err := b.sortedQueues(ctx)
	if err != nil {
		return nil, err
	}
	counts, err := b.stateCounts(ctx, qs, "", core.AllStates)
	if err != nil {
		return nil, wrap("list queues", err)
	}
	pipe := b.rdb.Pipeline()
	confs := make([]*redis.MapStringStringCmd, len(qs))
	for i, q := range qs {
		confs[i] = pipe.HGetAll(ctx, b.ks.queueKeys(q)[kConf])
	}
	if len(qs) > 0 {
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, wrap("list queues", err)
		}
	}
	out := []core.QueueInfo{}
	for i, q := range qs {
		info := core.QueueInfo{Queue: q, Jobs: map[core.JobState]int64{}, Paused: confs[i].Val()["paused"] == "1"}
		total := int64(0)
		for s, n := range counts[i] {
			if n > 0 {
				info.Jobs[s] = n
				total += n
			}
		}
		if total == 0 && len(confs[i].Val()) == 0 {
			continue
		}
		out = append(out, info)
	}
	return out, nil
}
