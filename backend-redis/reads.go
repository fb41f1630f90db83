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

// runningPrefix is the index prefix of running jobs, which the index does
// not hold: the lease set has exactly the running jobs of a queue.
const runningPrefix = "s|" + string(core.StateRunning) + "|"

func uniqueStates(in []core.JobState) []core.JobState {
	out := slices.Clone(in)
	slices.Sort(out)
	return slices.Compact(out)
}

// upper is the exclusive upper bound of the members starting with prefix p
// (which ends in '|', above every character of a name or id).
func upper(p string) string { return p[:len(p)-1] + "}" }

// ListJobs returns one page of jobs ordered by id, as SearchJobs does for
// a search with no search field: a walk over the index ranges of its queue,
// task or states. See core.QueueBackend.
func (b *Backend) ListJobs(ctx context.Context, f core.JobFilter) (core.JobPage, error) {
	if err := b.check("list jobs"); err != nil {
		return core.JobPage{}, err
	}
	if err := core.ValidateJobFilter(f); err != nil {
		return core.JobPage{}, err
	}
	return b.searchPage(ctx, core.JobSearch{JobFilter: f})
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
		info := core.QueueInfo{Queue: q, Jobs: map[core.JobState]int64{}, Paused: confs[i].Val()["paused"] == "1", Declared: confs[i].Val()["declared"] == "1"}
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
