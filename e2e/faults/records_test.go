package faults_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/boson-go/boson/core"
)

// The worker processes record what they did as typed events, one JSON
// object a line, in a file of their own. The handler records when an
// attempt starts, each step value it reads back and when it returns its
// result; a wrapper around the worker's backend records every fenced
// write the runtime sends and the store's answer to it. Nothing is taken
// from log messages, so a renamed message cannot silence a check.

// eventKind names a kind of worker-side event.
type eventKind string

const (
	// evStart: an attempt's handler began (Job, Token).
	evStart eventKind = "start"
	// evStep: an attempt read the value of step Step back (Job, Token,
	// Step, Value).
	evStep eventKind = "step"
	// evFinish: an attempt's handler returned its result (Job, Token).
	evFinish eventKind = "finish"
	// evSend: a fenced write is about to reach the store (Job, Token, Op).
	// It is written before the call, so a write the store may have applied
	// always has its send event, even if the process died at once.
	evSend eventKind = "send"
	// evReply: the store answered a fenced write (Job, Token, Op, Outcome).
	evReply eventKind = "reply"
)

// writeOp names a fenced write.
type writeOp string

const (
	opComplete   writeOp = "complete"
	opHeartbeat  writeOp = "heartbeat"
	opFail       writeOp = "fail"
	opSleep      writeOp = "sleep"
	opCheckpoint writeOp = "checkpoint"
)

// outcome is the store's answer to a fenced write.
type outcome string

const (
	// outAccepted: the store applied the write.
	outAccepted outcome = "accepted"
	// outLeaseLost: the store refused it with core.ErrLeaseLost.
	outLeaseLost outcome = "lease_lost"
	// outError: the call failed otherwise; the write may or may not have
	// been applied.
	outError outcome = "error"
)

// event is one worker-side record.
type event struct {
	Kind    eventKind `json:"kind"`
	Job     string    `json:"job"`
	Token   int64     `json:"token"`
	Op      writeOp   `json:"op,omitempty"`
	Outcome outcome   `json:"outcome,omitempty"`
	Step    string    `json:"step,omitempty"`
	Value   string    `json:"value,omitempty"`
}

// valid reports what is wrong with e, or "" when nothing is.
func (e event) valid() string {
	if e.Job == "" || e.Token <= 0 {
		return "no job or token"
	}
	switch e.Kind {
	case evStart, evFinish:
	case evStep:
		if e.Step == "" || e.Value == "" {
			return "a step event without step or value"
		}
	case evSend, evReply:
		switch e.Op {
		case opComplete, opHeartbeat, opFail, opSleep, opCheckpoint:
		default:
			return fmt.Sprintf("unknown write %q", e.Op)
		}
		if e.Kind == evReply {
			switch e.Outcome {
			case outAccepted, outLeaseLost, outError:
			default:
				return fmt.Sprintf("unknown outcome %q", e.Outcome)
			}
		}
	default:
		return fmt.Sprintf("unknown kind %q", e.Kind)
	}
	return ""
}

// recorder appends events to a worker process's file: one write per
// line, so a SIGKILL loses no event already written and tears none.
type recorder struct {
	mu sync.Mutex
	f  *os.File
}

func (r *recorder) add(e event) {
	b, err := json.Marshal(e)
	if err != nil {
		panic(err) // an event is plain strings and numbers
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	_, _ = r.f.Write(append(b, '\n'))
}

func (r *recorder) reply(op writeOp, l core.Lease, err error) {
	o := outAccepted
	switch {
	case errors.Is(err, core.ErrLeaseLost):
		o = outLeaseLost
	case err != nil:
		o = outError
	}
	r.add(event{Kind: evReply, Job: l.JobID, Token: l.Token, Op: op, Outcome: o})
}

// recordingBackend is a worker process's backend: the store's own, with
// every fenced write and its answer recorded.
type recordingBackend struct {
	core.QueueBackend
	rec *recorder
}

// notifyingBackend is a recordingBackend whose store offers
// notifications; it passes them through so that the worker claims as it
// would without the recording.
type notifyingBackend struct {
	recordingBackend
	n core.Notifier
}

func (b notifyingBackend) Subscribe(queue string) (<-chan struct{}, func()) {
	return b.n.Subscribe(queue)
}

// recording wraps b so that its fenced writes are recorded in rec.
func recording(b core.QueueBackend, rec *recorder) core.QueueBackend {
	rb := recordingBackend{QueueBackend: b, rec: rec}
	if n, ok := b.(core.Notifier); ok {
		return notifyingBackend{recordingBackend: rb, n: n}
	}
	return rb
}

func (b recordingBackend) Complete(ctx context.Context, items []core.Completion) ([]error, error) {
	for _, it := range items {
		b.rec.add(event{Kind: evSend, Job: it.Lease.JobID, Token: it.Lease.Token, Op: opComplete})
	}
	errs, err := b.QueueBackend.Complete(ctx, items)
	for i, it := range items {
		switch {
		case err != nil:
			b.rec.reply(opComplete, it.Lease, err)
		case i < len(errs):
			b.rec.reply(opComplete, it.Lease, errs[i])
		default:
			b.rec.reply(opComplete, it.Lease, fmt.Errorf("the store answered %d of %d items", len(errs), len(items)))
		}
	}
	return errs, err
}

func (b recordingBackend) Heartbeat(ctx context.Context, l core.Lease, ttl time.Duration) (core.Lease, error) {
	b.rec.add(event{Kind: evSend, Job: l.JobID, Token: l.Token, Op: opHeartbeat})
	nl, err := b.QueueBackend.Heartbeat(ctx, l, ttl)
	b.rec.reply(opHeartbeat, l, err)
	return nl, err
}

func (b recordingBackend) Fail(ctx context.Context, f core.Failure) (core.JobState, error) {
	b.rec.add(event{Kind: evSend, Job: f.Lease.JobID, Token: f.Lease.Token, Op: opFail})
	st, err := b.QueueBackend.Fail(ctx, f)
	b.rec.reply(opFail, f.Lease, err)
	return st, err
}

func (b recordingBackend) Sleep(ctx context.Context, l core.Lease, until time.Time) error {
	b.rec.add(event{Kind: evSend, Job: l.JobID, Token: l.Token, Op: opSleep})
	err := b.QueueBackend.Sleep(ctx, l, until)
	b.rec.reply(opSleep, l, err)
	return err
}

func (b recordingBackend) SaveCheckpoint(ctx context.Context, l core.Lease, step string, value []byte) ([]byte, error) {
	b.rec.add(event{Kind: evSend, Job: l.JobID, Token: l.Token, Op: opCheckpoint, Step: step})
	v, err := b.QueueBackend.SaveCheckpoint(ctx, l, step, value)
	b.rec.reply(opCheckpoint, l, err)
	return v, err
}

// readEvents reads every worker process's events from dir, and counts
// the records torn by a kill. A line that is not a valid event is an
// error: the records must be complete to be held against the store. The
// one exception is a last line without its newline: a worker killed
// while the kernel wrote its record across a page boundary of the file
// leaves the first part of it behind. Such a record never completed, and
// since a write's send event is recorded before the write, the store
// never saw the write a torn send announced.
func readEvents(dir string) (evs []event, torn int, err error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return nil, 0, err
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, 0, err
		}
		for n := 1; len(b) > 0; n++ {
			line, rest, complete := bytes.Cut(b, []byte("\n"))
			b = rest
			if !complete {
				torn++
				break
			}
			var e event
			if err := json.Unmarshal(line, &e); err != nil {
				return nil, 0, fmt.Errorf("%s:%d: %v", name, n, err)
			}
			if why := e.valid(); why != "" {
				return nil, 0, fmt.Errorf("%s:%d: %s: %s", name, n, why, line)
			}
			evs = append(evs, e)
		}
	}
	return evs, torn, nil
}
