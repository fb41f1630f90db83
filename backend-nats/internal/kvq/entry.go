package kvq

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// readyEntry is the work-queue message of a queued or sleeping job: its
// record at revision Rev. The owner holds it until the job is claimed or
// otherwise moves on.
type readyEntry struct {
	Rec *record `json:"rec"`
	Rev uint64  `json:"rev"`
}

// leaseEntry is the work-queue message of a claim of one job: the owner
// holds it until the job leaves that claim, so that a new owner knows every
// running job. In a notice, a set Expires reports a heartbeat's new expiry
// instead.
type leaseEntry struct {
	ID      string    `json:"id"`
	Token   int64     `json:"token"`
	Expires time.Time `json:"expires,omitempty"`
}

// doneNotice tells the owner that jobs left their claims (finished,
// requeued, slept or were cancelled), so that it acknowledges their lease
// entries without reading their records. A lost notice costs the owner a
// read at the lease's expiry.
type doneNotice struct {
	Items []leaseEntry `json:"items"`
}

// publishReady appends a ready entry for r at revision rev and signals
// the job's queue.
func (b *Backend) publishReady(ctx context.Context, r *record, rev uint64) error {
	data, err := json.Marshal(readyEntry{Rec: r, Rev: rev})
	if err != nil {
		return fmt.Errorf("natsq: encode ready entry: %w", err)
	}
	if _, err := b.js.Publish(ctx, b.readySubj(), data); err != nil {
		return fmt.Errorf("natsq: publish ready entry of %s: %w", r.Job.ID, err)
	}
	b.heldLocally(r, rev)
	b.signal(r.Job.Queue)
	return nil
}

// heldLocally takes a stored ready entry into this Backend's index at
// once when it owns the namespace, so that its own next claim sees it.
func (b *Backend) heldLocally(r *record, rev uint64) {
	if o := b.owner(); o != nil {
		o.mu.Lock()
		o.holdLocked(r, rev, nil)
		o.mu.Unlock()
	}
}

// publishReadyAsync appends ready entries without waiting; wait for the
// returned futures.
func (b *Backend) publishReadyAsync(r *record, rev uint64) (jetstream.PubAckFuture, error) {
	data, err := json.Marshal(readyEntry{Rec: r, Rev: rev})
	if err != nil {
		return nil, fmt.Errorf("natsq: encode ready entry: %w", err)
	}
	return b.js.PublishMsgAsync(&nats.Msg{Subject: b.readySubj(), Data: data})
}

// tellDone tells the owner that claims ended or, for items with Expires,
// moved their expiry: at once when this Backend is the owner, else by a
// best-effort notice (a lost one costs the owner a read of the record at
// the expiry it knows).
func (b *Backend) tellDone(items ...leaseEntry) {
	if len(items) == 0 {
		return
	}
	if o := b.owner(); o != nil {
		o.noted(items)
		return
	}
	if data, err := json.Marshal(doneNotice{Items: items}); err == nil {
		_ = b.nc.Publish(b.doneSubj(), data)
	}
}

// signal wakes the subscribers of queue in every process.
func (b *Backend) signal(queue string) { _ = b.nc.Publish(b.sigSubj(queue), nil) }
