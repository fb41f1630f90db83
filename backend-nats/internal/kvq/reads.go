package kvq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/boson-go/boson/core"
	"github.com/nats-io/nats.go/jetstream"
)

// scan hands every value stored under filter to fn, in stream order,
// through an ephemeral consumer that is deleted afterwards. A value that
// changes during the scan moves to the stream's end and may be handed over
// twice (the older first); the scan ends at the stream's last message when
// it had read everything up to the last message when it began, so it ends
// however busy the stream is.
func (b *Backend) scan(ctx context.Context, filter string, fn func(subj string, data []byte) error) error {
	lastSeq := func() (uint64, error) {
		info, err := again(ctx, func() (*jetstream.StreamInfo, error) { return b.kv.Info(ctx) })
		if err != nil {
			return 0, fmt.Errorf("natsq: scan %s: %w", filter, err)
		}
		return info.State.LastSeq, nil
	}
	bound, err := lastSeq()
	if err != nil {
		return err
	}
	extended := false
	cons, err := again(ctx, func() (jetstream.Consumer, error) {
		return b.kv.CreateConsumer(ctx, jetstream.ConsumerConfig{FilterSubject: filter, AckPolicy: jetstream.AckNonePolicy,
			DeliverPolicy: jetstream.DeliverAllPolicy, InactiveThreshold: time.Minute, MemoryStorage: true, Replicas: 1})
	})
	if err != nil {
		return fmt.Errorf("natsq: scan %s: %w", filter, err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		_ = b.kv.DeleteConsumer(dctx, cons.CachedInfo().Name)
		cancel()
	}()
	remaining := cons.CachedInfo().NumPending
	for idle := 0; remaining > 0; {
		batch, err := again(ctx, func() (jetstream.MessageBatch, error) { return cons.FetchNoWait(int(min(remaining, 4096))) })
		if err != nil {
			return fmt.Errorf("natsq: scan %s: %w", filter, err)
		}
		got := 0
		for m := range batch.Messages() {
			got++
			meta, err := m.Metadata()
			if err != nil {
				return fmt.Errorf("natsq: %w: scanned message without metadata: %v", core.ErrInvalidState, err)
			}
			remaining = meta.NumPending
			if meta.Sequence.Stream > bound {
				if extended {
					remaining = 0
					break
				}
				// The first pass is done; read on to where the stream
				// ends now, for the values that moved during it.
				if bound, err = lastSeq(); err != nil {
					return err
				}
				extended = true
			}
			if err := fn(m.Subject(), m.Data()); err != nil {
				return err
			}
		}
		berr := batch.Error()
		if berr != nil && !errors.Is(berr, jetstream.ErrNoMessages) && !retryable(berr) {
			return fmt.Errorf("natsq: scan %s: %w", filter, berr)
		}
		if got > 0 {
			idle = 0
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		// Nothing delivered: ask the server whether anything is left (the
		// values counted as pending may have been replaced or deleted
		// meanwhile); a consumer that was just made may also deliver
		// nothing for a moment.
		ci, err := again(ctx, func() (*jetstream.ConsumerInfo, error) { return cons.Info(ctx) })
		if err != nil {
			return fmt.Errorf("natsq: scan %s: %w", filter, err)
		}
		if ci.NumPending == 0 {
			return nil
		}
		remaining = ci.NumPending
		if idle++; idle > 250 {
			return fmt.Errorf("natsq: scan %s: the server delivered nothing with %d messages pending", filter, remaining)
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// scanJobs hands every job record to fn once, in the newest version the
// scan saw.
func (b *Backend) scanJobs(ctx context.Context, fn func(r *record) error) error {
	seen := map[string]*record{}
	var order []string
	err := b.scan(ctx, b.jobsFilter(), func(subj string, data []byte) error {
		r, err := decodeRecord(data)
		if err != nil {
			return corrupt("job record "+subj, err)
		}
		if _, ok := seen[r.Job.ID]; !ok {
			order = append(order, r.Job.ID)
		}
		seen[r.Job.ID] = r
		return nil
	})
	if err != nil {
		return err
	}
	for _, id := range order {
		if err := fn(seen[id]); err != nil {
			return err
		}
	}
	return nil
}

func matches(f *core.JobFilter, j *core.Job) bool {
	if f.Queue != "" && j.Queue != f.Queue || f.Task != "" && j.Task != f.Task {
		return false
	}
	return len(f.States) == 0 || slices.Contains(f.States, j.State)
}

// GetJob implements core.QueueBackend.
func (b *Backend) GetJob(ctx context.Context, jobID string) (core.Job, error) {
	if err := b.isClosed(); err != nil {
		return core.Job{}, err
	}
	r, _, err := b.loadJob(ctx, jobID)
	if err != nil {
		return core.Job{}, err
	}
	return r.Job, nil
}

// ListRuns implements core.QueueBackend.
func (b *Backend) ListRuns(ctx context.Context, jobID string) ([]core.Run, error) {
	if err := b.isClosed(); err != nil {
		return nil, err
	}
	r, _, err := b.loadJob(ctx, jobID)
	if err != nil {
		return nil, err
	}
	return append([]core.Run{}, r.Runs...), nil
}

// Checkpoints implements core.QueueBackend.
func (b *Backend) Checkpoints(ctx context.Context, jobID string) ([]core.Checkpoint, error) {
	if err := b.isClosed(); err != nil {
		return nil, err
	}
	r, _, err := b.loadJob(ctx, jobID)
	if err != nil {
		return nil, err
	}
	steps := make([]string, 0, len(r.CK))
	for s := range r.CK {
		steps = append(steps, s)
	}
	sort.Strings(steps)
	out := make([]core.Checkpoint, 0, len(steps))
	for _, s := range steps {
		v, err := b.checkpointValue(ctx, jobID, s, r.CK[s].Token)
		if err != nil {
			return nil, err
		}
		out = append(out, core.Checkpoint{JobID: jobID, Step: s, Value: v, CreatedAt: r.CK[s].At})
	}
	return out, nil
}

// ListJobs implements core.QueueBackend.
func (b *Backend) ListJobs(ctx context.Context, f core.JobFilter) (core.JobPage, error) {
	if err := b.isClosed(); err != nil {
		return core.JobPage{}, err
	}
	if err := core.ValidateJobFilter(f); err != nil {
		return core.JobPage{}, err
	}
	var all []core.Job
	err := b.scanJobs(ctx, func(r *record) error {
		j := &r.Job
		if !matches(&f, j) {
			return nil
		}
		if f.Cursor != "" && (!f.Desc && j.ID <= f.Cursor || f.Desc && j.ID >= f.Cursor) {
			return nil
		}
		all = append(all, *j)
		return nil
	})
	if err != nil {
		return core.JobPage{}, err
	}
	sort.Slice(all, func(i, k int) bool {
		if f.Desc {
			return all[i].ID > all[k].ID
		}
		return all[i].ID < all[k].ID
	})
	page := core.JobPage{Jobs: []core.Job{}}
	size := f.PageSize()
	if len(all) > size {
		page.Jobs = all[:size]
		page.Next = all[size-1].ID
	} else {
		page.Jobs = append(page.Jobs, all...)
	}
	return page, nil
}

// CountJobs implements core.QueueBackend.
func (b *Backend) CountJobs(ctx context.Context, f core.JobFilter) (map[core.JobState]int64, error) {
	if err := b.isClosed(); err != nil {
		return nil, err
	}
	if err := core.ValidateJobFilter(f); err != nil {
		return nil, err
	}
	out := map[core.JobState]int64{}
	err := b.scanJobs(ctx, func(r *record) error {
		if matches(&f, &r.Job) {
			out[r.Job.State]++
		}
		return nil
	})
	return out, err
}

// TaskStats implements core.QueueBackend.
func (b *Backend) TaskStats(ctx context.Context, task string) (core.TaskStats, error) {
	if err := b.isClosed(); err != nil {
		return core.TaskStats{}, err
	}
	if err := core.ValidateName("task", task); err != nil {
		return core.TaskStats{}, err
	}
	st := core.TaskStats{Task: task, Jobs: map[core.JobState]int64{}, Runs: map[core.RunStatus]int64{}}
	err := b.scanJobs(ctx, func(r *record) error {
		if r.Job.Task != task {
			return nil
		}
		st.Jobs[r.Job.State]++
		for _, run := range r.Runs {
			st.Runs[run.Status]++
			st.RunTime += run.Duration()
		}
		return nil
	})
	return st, err
}

// ListQueues implements core.QueueBackend.
func (b *Backend) ListQueues(ctx context.Context) ([]core.QueueInfo, error) {
	if err := b.isClosed(); err != nil {
		return nil, err
	}
	qs := map[string]*core.QueueInfo{}
	get := func(q string) *core.QueueInfo {
		if qi := qs[q]; qi != nil {
			return qi
		}
		qi := &core.QueueInfo{Queue: q, Jobs: map[core.JobState]int64{}}
		qs[q] = qi
		return qi
	}
	if err := b.scanJobs(ctx, func(r *record) error {
		get(r.Job.Queue).Jobs[r.Job.State]++
		return nil
	}); err != nil {
		return nil, err
	}
	if err := b.scan(ctx, "bk."+b.ns+".q.*", func(subj string, data []byte) error {
		var c core.QueueConfig
		if err := json.Unmarshal(data, &c); err != nil {
			return corrupt("queue config "+subj, err)
		}
		get(c.Queue).Paused = c.Paused
		return nil
	}); err != nil {
		return nil, err
	}
	out := make([]core.QueueInfo, 0, len(qs))
	for _, qi := range qs {
		out = append(out, *qi)
	}
	sort.Slice(out, func(i, k int) bool { return out[i].Queue < out[k].Queue })
	return out, nil
}

// Cleanup implements core.QueueBackend.
func (b *Backend) Cleanup(ctx context.Context, req core.CleanupRequest) (int, error) {
	if err := b.isClosed(); err != nil {
		return 0, err
	}
	if err := core.ValidateCleanup(req, b.opts.Limits); err != nil {
		return 0, err
	}
	before := req.FinishedBefore.UTC().Truncate(time.Microsecond)
	var doomed []core.Job
	err := b.scanJobs(ctx, func(r *record) error {
		j := &r.Job
		if j.State.Terminal() && j.FinishedAt.Before(before) && (req.Queue == "" || j.Queue == req.Queue) {
			doomed = append(doomed, *j)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	sort.Slice(doomed, func(i, k int) bool {
		if !doomed[i].FinishedAt.Equal(doomed[k].FinishedAt) {
			return doomed[i].FinishedAt.Before(doomed[k].FinishedAt)
		}
		return doomed[i].ID < doomed[k].ID
	})
	if len(doomed) > req.Limit {
		doomed = doomed[:req.Limit]
	}
	for _, j := range doomed {
		if err := b.kv.Purge(ctx, jetstream.WithPurgeSubject("bk."+b.ns+".c."+j.ID+".>")); err != nil {
			return 0, fmt.Errorf("natsq: delete checkpoints of %s: %w", j.ID, err)
		}
		if j.IdempotencyKey != "" {
			subj := b.keySubj(j.Queue, j.IdempotencyKey)
			if data, _, err := b.get(ctx, subj); err == nil {
				var k keyRecord
				if json.Unmarshal(data, &k) == nil && k.Job == j.ID {
					if err := b.del(ctx, subj); err != nil {
						return 0, err
					}
				}
			}
		}
		if err := b.del(ctx, b.jobSubj(j.ID)); err != nil {
			return 0, err
		}
	}
	return len(doomed), nil
}
