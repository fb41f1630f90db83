package kvq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/boson-go/boson/core"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// keyRecord is the value of an idempotency key: the job that holds it.
type keyRecord struct {
	Job         string `json:"job"`
	Fingerprint string `json:"fp"`
}

// intentRecord is the write-ahead record of an enqueue batch: the jobs it
// stores. It is written before any job record and deleted after the last
// ready entry, so a batch whose writer died half way is completed by the
// owner's sweep: every job of it is stored, or none.
type intentRecord struct {
	Parts int        `json:"parts"`
	Jobs  []core.Job `json:"jobs,omitempty"`
}

// keyWait is how long a key whose job does not exist yet is taken to
// belong to an enqueue still under way.
const keyWait = 30 * time.Second

// Enqueue implements core.QueueBackend.
func (b *Backend) Enqueue(ctx context.Context, reqs []core.EnqueueRequest) ([]core.EnqueueResult, error) {
	if err := b.isClosed(); err != nil {
		return nil, err
	}
	now := b.now()
	jobs, err := core.PrepareJobs(reqs, now, b.opts.Limits)
	if err != nil {
		return nil, err
	}
	if b.opts.DecisionClock == nil {
		at := b.opts.Clock.Now()
		for i := range jobs {
			jobs[i].ID = core.NewID(at)
		}
	}
	for attempt := 0; ; attempt++ {
		res, err := b.enqueueOnce(ctx, jobs, now)
		if !errors.Is(err, errConflict) || attempt == 5 {
			return res, err
		}
	}
}

// enqueueOnce decides the batch's keys and limits, then stores it. It
// fails with errConflict when another enqueue took one of its keys first.
func (b *Backend) enqueueOnce(ctx context.Context, jobs []core.Job, now time.Time) ([]core.EnqueueResult, error) {
	res := make([]core.EnqueueResult, len(jobs))
	type reserve struct {
		subj   string
		expect int64
		data   []byte
	}
	var keys []reserve
	inBatch := map[string]int{}
	fresh := make([]bool, len(jobs))
	perTask := map[string]int{}
	for i, j := range jobs {
		fresh[i] = true
		if j.IdempotencyKey != "" {
			subj := b.keySubj(j.Queue, j.IdempotencyKey)
			if prev, ok := inBatch[subj]; ok {
				if jobs[prev].Fingerprint != j.Fingerprint {
					return nil, &core.BatchError{Index: i, Err: fmt.Errorf("%w: key %q is used twice in the batch with different requests", core.ErrIdempotencyConflict, j.IdempotencyKey)}
				}
				res[i] = core.EnqueueResult{Job: jobs[prev], Reused: true}
				fresh[i] = false
				continue
			}
			held, expect, err := b.lookupKey(ctx, subj, now)
			if err != nil {
				return nil, err
			}
			if held != nil {
				if held.Job.Fingerprint != j.Fingerprint {
					return nil, &core.BatchError{Index: i, Err: fmt.Errorf("%w: key %q is held by job %s", core.ErrIdempotencyConflict, j.IdempotencyKey, held.Job.ID)}
				}
				res[i] = core.EnqueueResult{Job: held.Job, Reused: true}
				fresh[i] = false
				continue
			}
			data, _ := json.Marshal(keyRecord{Job: j.ID, Fingerprint: j.Fingerprint})
			keys = append(keys, reserve{subj, expect, data})
			inBatch[subj] = i
		}
		perTask[j.Task]++
	}
	if err := b.checkLimits(ctx, perTask, now); err != nil {
		return nil, err
	}
	var created []string
	for _, k := range keys {
		if _, err := b.put(ctx, k.subj, k.data, k.expect); err != nil {
			for _, s := range created {
				_ = b.del(ctx, s)
			}
			return nil, err
		}
		created = append(created, k.subj)
	}
	var batch []core.Job
	for i, j := range jobs {
		if fresh[i] {
			batch = append(batch, j)
		}
	}
	if len(batch) > 0 {
		if err := b.storeBatch(ctx, batch); err != nil {
			return nil, err
		}
	}
	for i := range jobs {
		if fresh[i] {
			res[i] = core.EnqueueResult{Job: jobs[i]}
		}
	}
	return res, nil
}

// lookupKey returns the job that holds the key at subj, or nil and the
// revision to replace when no job holds it. A key whose job does not
// exist belongs to an enqueue under way for keyWait; lookupKey waits for it.
func (b *Backend) lookupKey(ctx context.Context, subj string, now time.Time) (*record, int64, error) {
	// With a DecisionClock the key's age by the server is unknown: an
	// enqueue under way is given two seconds of this process's time.
	localWait := time.Now().Add(2 * time.Second)
	for {
		m, err := b.getMsg(ctx, subj)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil, 0, nil
		}
		if err != nil {
			return nil, 0, fmt.Errorf("natsq: read key: %w", err)
		}
		var k keyRecord
		if err := json.Unmarshal(m.Data, &k); err != nil {
			return nil, 0, corrupt("idempotency key "+subj, err)
		}
		rec, _, err := b.loadJob(ctx, k.Job)
		if err == nil {
			return rec, 0, nil
		}
		if !errors.Is(err, core.ErrNotFound) {
			return nil, 0, err
		}
		stale := !b.now().Before(m.Time.Add(keyWait))
		if b.opts.DecisionClock != nil {
			stale = !time.Now().Before(localWait)
		}
		if stale {
			return nil, int64(m.Sequence), nil
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			return nil, 0, fmt.Errorf("natsq: waiting for the enqueue that holds a key: %w", ctx.Err())
		}
	}
}

// checkLimits refuses the batch when a task's MaxInFlight or
// MaxEnqueuePerSecond would be exceeded.
func (b *Backend) checkLimits(ctx context.Context, perTask map[string]int, now time.Time) error {
	for task, n := range perTask {
		cfg, err := b.GetTaskConfig(ctx, task)
		if errors.Is(err, core.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if cfg.MaxInFlight == 0 && cfg.MaxEnqueuePerSecond == 0 {
			continue
		}
		var active, recent int
		lo := now.Add(-time.Second)
		err = b.scanJobs(ctx, func(r *record) error {
			j := &r.Job
			if j.Task != task {
				return nil
			}
			if j.State.Active() {
				active++
			}
			if j.CreatedAt.After(lo) && !j.CreatedAt.After(now) {
				recent++
			}
			return nil
		})
		if err != nil {
			return err
		}
		if cfg.MaxInFlight > 0 && active+n > cfg.MaxInFlight {
			return fmt.Errorf("%w: task %s has %d active jobs, %d more would exceed max in flight %d", core.ErrRateLimited, task, active, n, cfg.MaxInFlight)
		}
		if cfg.MaxEnqueuePerSecond > 0 && recent+n > cfg.MaxEnqueuePerSecond {
			return fmt.Errorf("%w: task %s had %d jobs created within the last second, %d more would exceed %d per second", core.ErrRateLimited, task, recent, n, cfg.MaxEnqueuePerSecond)
		}
	}
	return nil
}

// storeBatch writes the batch's intent, its job records and ready
// entries, then deletes the intent.
func (b *Backend) storeBatch(ctx context.Context, jobs []core.Job) error {
	batch := jobs[0].ID
	if err := b.writeIntent(ctx, batch, jobs); err != nil {
		return err
	}
	if err := b.materialize(ctx, jobs); err != nil {
		return err
	}
	return b.dropIntent(ctx, batch)
}

// writeIntent stores the intent of batch, in parts when it is larger than
// a message; the record without a suffix, written last, commits it.
func (b *Backend) writeIntent(ctx context.Context, batch string, jobs []core.Job) error {
	limit := max(int(b.nc.MaxPayload())-64<<10, 64<<10)
	data, err := json.Marshal(intentRecord{Jobs: jobs})
	if err != nil {
		return fmt.Errorf("natsq: encode batch: %w", err)
	}
	if len(data) <= limit {
		_, err := b.put(ctx, b.intentSubj(batch), data, -1)
		return err
	}
	// One part per chunk of jobs, each under the limit.
	parts := 0
	for lo := 0; lo < len(jobs); {
		hi, size := lo, 0
		for hi < len(jobs) {
			d, _ := json.Marshal(jobs[hi])
			if hi > lo && size+len(d) > limit {
				break
			}
			size += len(d) + 1
			hi++
		}
		pd, _ := json.Marshal(intentRecord{Jobs: jobs[lo:hi]})
		if _, err := b.put(ctx, b.intentSubj(batch)+".p"+strconv.Itoa(parts), pd, -1); err != nil {
			return err
		}
		parts++
		lo = hi
	}
	cd, _ := json.Marshal(intentRecord{Parts: parts})
	_, err = b.put(ctx, b.intentSubj(batch), cd, -1)
	return err
}

// readIntent returns the jobs of a committed intent.
func (b *Backend) readIntent(ctx context.Context, batch string) ([]core.Job, error) {
	data, _, err := b.get(ctx, b.intentSubj(batch))
	if err != nil {
		return nil, err
	}
	var in intentRecord
	if err := json.Unmarshal(data, &in); err != nil {
		return nil, corrupt("batch intent "+batch, err)
	}
	jobs := in.Jobs
	for p := range in.Parts {
		pd, _, err := b.get(ctx, b.intentSubj(batch)+".p"+strconv.Itoa(p))
		if err != nil {
			return nil, fmt.Errorf("natsq: %w: part %d of batch intent %s: %v", core.ErrInvalidState, p, batch, err)
		}
		var part intentRecord
		if err := json.Unmarshal(pd, &part); err != nil {
			return nil, corrupt("batch intent "+batch, err)
		}
		jobs = append(jobs, part.Jobs...)
	}
	return jobs, nil
}

func (b *Backend) dropIntent(ctx context.Context, batch string) error {
	if err := b.kv.Purge(ctx, jetstream.WithPurgeSubject(b.intentSubj(batch)+".>")); err != nil {
		return fmt.Errorf("natsq: delete batch intent parts: %w", err)
	}
	return b.del(ctx, b.intentSubj(batch))
}

// materialize creates the record and ready entry of every job not stored
// yet. It is safe to repeat: a record that exists is left as it is and its
// entry published again at its current revision (the owner keeps one).
func (b *Backend) materialize(ctx context.Context, jobs []core.Job) error {
	futs := make([]jetstream.PubAckFuture, len(jobs))
	recs := make([]*record, len(jobs))
	for i := range jobs {
		recs[i] = &record{Job: jobs[i]}
		data, err := json.Marshal(recs[i])
		if err != nil {
			return fmt.Errorf("natsq: encode job %s: %w", jobs[i].ID, err)
		}
		futs[i], err = b.js.PublishMsgAsync(&nats.Msg{Subject: b.jobSubj(jobs[i].ID), Data: data},
			jetstream.WithExpectLastSequencePerSubject(0))
		if err != nil {
			return fmt.Errorf("natsq: store job %s: %w", jobs[i].ID, err)
		}
	}
	revs := make([]uint64, len(jobs))
	for i, f := range futs {
		select {
		case ack := <-f.Ok():
			revs[i] = ack.Sequence
		case err := <-f.Err():
			if !isConflict(err) {
				return fmt.Errorf("natsq: store job %s: %w", jobs[i].ID, err)
			}
			cur, rev, err := b.loadJob(ctx, jobs[i].ID)
			if err != nil {
				return err
			}
			recs[i], revs[i] = cur, rev
		case <-ctx.Done():
			return fmt.Errorf("natsq: store jobs: %w", ctx.Err())
		}
	}
	efuts := make([]jetstream.PubAckFuture, 0, len(jobs))
	eidx := make([]int, 0, len(jobs))
	queues := map[string]bool{}
	for i, r := range recs {
		if r.Job.State != core.StateQueued && r.Job.State != core.StateSleeping {
			continue
		}
		f, err := b.publishReadyAsync(r, revs[i])
		if err != nil {
			return err
		}
		efuts = append(efuts, f)
		eidx = append(eidx, i)
		queues[r.Job.Queue] = true
	}
	for n, f := range efuts {
		select {
		case <-f.Ok():
			b.heldLocally(recs[eidx[n]], revs[eidx[n]])
		case err := <-f.Err():
			return fmt.Errorf("natsq: ready entry: %w", err)
		case <-ctx.Done():
			return fmt.Errorf("natsq: ready entries: %w", ctx.Err())
		}
	}
	for q := range queues {
		b.signal(q)
	}
	return nil
}
