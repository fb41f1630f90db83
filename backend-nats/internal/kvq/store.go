package kvq

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/boson-go/boson/core"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// record is the stored state of one job: the job, its runs, and which
// claim's value each checkpoint step holds.
type record struct {
	Job  core.Job         `json:"job"`
	Runs []core.Run       `json:"runs,omitempty"`
	CK   map[string]ckRef `json:"ck,omitempty"`
}

// ckRef names the stored value of a checkpoint: the token of the claim
// that wrote it first, and when.
type ckRef struct {
	Token int64     `json:"t"`
	At    time.Time `json:"at"`
}

// Subjects of the state stream.
func (b *Backend) jobSubj(id string) string { return "bk." + b.ns + ".j." + id }
func (b *Backend) jobsFilter() string       { return "bk." + b.ns + ".j.*" }
func (b *Backend) ckSubj(id, step string, token int64) string {
	return fmt.Sprintf("bk.%s.c.%s.%s.%d", b.ns, id, step, token)
}
func (b *Backend) keySubj(queue, key string) string {
	h := sha256.Sum256([]byte(key))
	return "bk." + b.ns + ".k." + queue + "." + hex.EncodeToString(h[:16])
}
func (b *Backend) taskCfgSubj(task string) string   { return "bk." + b.ns + ".t." + task }
func (b *Backend) queueCfgSubj(queue string) string { return "bk." + b.ns + ".q." + queue }
func (b *Backend) intentSubj(batch string) string   { return "bk." + b.ns + ".b." + batch }
func (b *Backend) ownerSubj() string                { return "bk." + b.ns + ".own" }

// Subjects of the work-queue stream, and of core NATS (outside every
// stream: "bc." is captured by none).
func (b *Backend) readySubj() string           { return "bq." + b.ns + ".r" }
func (b *Backend) leaseSubj() string           { return "bq." + b.ns + ".x" }
func (b *Backend) rpcSubj() string             { return "bc." + b.ns + ".rpc" }
func (b *Backend) doneSubj() string            { return "bc." + b.ns + ".done" }
func (b *Backend) sigSubj(queue string) string { return "bc." + b.ns + ".sig." + queue }

var (
	// errMissing: the subject holds no message.
	errMissing = errors.New("natsq: no such key")
	// errConflict: a compare-and-set found another revision.
	errConflict = errors.New("natsq: revision changed")
)

// get returns the value and revision stored under subj, or errMissing.
func (b *Backend) get(ctx context.Context, subj string) ([]byte, uint64, error) {
	m, err := b.getMsg(ctx, subj)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, 0, errMissing
	}
	if err != nil {
		return nil, 0, fmt.Errorf("natsq: get %s: %w", subj, err)
	}
	return m.Data, m.Sequence, nil
}

// getMsg reads the message stored under subj, retrying transient errors.
func (b *Backend) getMsg(ctx context.Context, subj string) (*jetstream.RawStreamMsg, error) {
	return again(ctx, func() (*jetstream.RawStreamMsg, error) { return b.kv.GetLastMsgForSubject(ctx, subj) })
}

// put stores data under subj if its revision is still expect (0: if the
// subject holds nothing), else fails with errConflict. expect < 0 stores
// unconditionally.
func (b *Backend) put(ctx context.Context, subj string, data []byte, expect int64) (uint64, error) {
	var opts []jetstream.PublishOpt
	if expect >= 0 {
		opts = append(opts, jetstream.WithExpectLastSequencePerSubject(uint64(expect)))
	}
	ack, err := b.js.PublishMsg(ctx, &nats.Msg{Subject: subj, Data: data}, opts...)
	if err != nil {
		if isConflict(err) {
			return 0, errConflict
		}
		return 0, fmt.Errorf("natsq: put %s: %w", subj, err)
	}
	return ack.Sequence, nil
}

// isConflict reports whether err is a compare-and-set that found another
// revision (one server reports 10071, a replicated stream 10164).
func isConflict(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// retryable reports whether a request may succeed when sent again soon: a
// replicated stream or consumer that is electing its leader answers
// nobody for a moment.
func retryable(err error) bool {
	return errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrTimeout)
}

// again runs fn until it succeeds, fails for good, or the retries for
// transient errors (about five seconds) run out.
func again[T any](ctx context.Context, fn func() (T, error)) (T, error) {
	for attempt := 0; ; attempt++ {
		v, err := fn()
		if err == nil || !retryable(err) || attempt == 50 || ctx.Err() != nil {
			return v, err
		}
		select {
		case <-time.After(time.Duration(min(attempt+1, 10)) * 10 * time.Millisecond):
		case <-ctx.Done():
			return v, err
		}
	}
}

// del removes subj.
func (b *Backend) del(ctx context.Context, subj string) error {
	if err := b.kv.Purge(ctx, jetstream.WithPurgeSubject(subj)); err != nil {
		return fmt.Errorf("natsq: delete %s: %w", subj, err)
	}
	return nil
}

// corrupt is the error of data the backend cannot decode: the call stops,
// nothing is skipped.
func corrupt(what string, err error) error {
	return fmt.Errorf("natsq: %w: %s cannot be decoded: %v", core.ErrInvalidState, what, err)
}

// loadJob returns a job's record and revision, or an error wrapping
// core.ErrNotFound.
func (b *Backend) loadJob(ctx context.Context, id string) (*record, uint64, error) {
	if id == "" || len(id) > core.MaxNameLength || strings.ContainsAny(id, ".*> \t\r\n") {
		return nil, 0, fmt.Errorf("%w: job %q", core.ErrNotFound, id)
	}
	data, rev, err := b.get(ctx, b.jobSubj(id))
	if errors.Is(err, errMissing) {
		return nil, 0, fmt.Errorf("%w: job %s", core.ErrNotFound, id)
	}
	if err != nil {
		return nil, 0, err
	}
	r, err := decodeRecord(data)
	if err != nil {
		return nil, 0, corrupt("job record "+id, err)
	}
	if r.Job.ID != id {
		return nil, 0, fmt.Errorf("natsq: %w: the record of job %s holds job %q", core.ErrInvalidState, id, r.Job.ID)
	}
	return r, rev, nil
}

func decodeRecord(data []byte) (*record, error) {
	var r record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, err
	}
	if !r.Job.State.Valid() {
		return nil, fmt.Errorf("job state %q", r.Job.State)
	}
	return &r, nil
}

// storeJob writes r if the job's revision is still expect (0: new job).
func (b *Backend) storeJob(ctx context.Context, r *record, expect uint64) (uint64, error) {
	data, err := json.Marshal(r)
	if err != nil {
		return 0, fmt.Errorf("natsq: encode job %s: %w", r.Job.ID, err)
	}
	return b.put(ctx, b.jobSubj(r.Job.ID), data, int64(expect))
}

// closeRun ends r's open run.
func (r *record) closeRun(status core.RunStatus, now time.Time, errText string) {
	if n := len(r.Runs); n > 0 && r.Runs[n-1].Status == core.RunRunning {
		r.Runs[n-1].Status = status
		r.Runs[n-1].FinishedAt = now
		r.Runs[n-1].Error = errText
	}
}

// clone returns a deep enough copy of r to change and store.
func (r *record) clone() *record {
	c := *r
	c.Runs = append([]core.Run(nil), r.Runs...)
	if r.CK != nil {
		c.CK = make(map[string]ckRef, len(r.CK))
		for k, v := range r.CK {
			c.CK[k] = v
		}
	}
	return &c
}
