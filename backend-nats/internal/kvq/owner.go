package kvq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/boson-go/boson/core"
	"github.com/google/btree"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ownerTTL is how long an owner lease lasts without renewal, by the
// server's time; the owner renews it every second.
const ownerTTL = 5 * time.Second

// ownerRecord is the value of the owner lease.
type ownerRecord struct {
	Origin string `json:"origin"`
}

// readyKey orders a queue's ready jobs for claims.
type readyKey struct {
	prio  int
	runAt int64 // unix microseconds
	id    string
}

func readyLess(a, b readyKey) bool {
	if a.prio != b.prio {
		return a.prio < b.prio
	}
	if a.runAt != b.runAt {
		return a.runAt < b.runAt
	}
	return a.id < b.id
}

// held is a ready entry the owner holds.
type held struct {
	rec *record
	rev uint64
	key readyKey
	msg jetstream.Msg
}

// leased is a claim the owner knows of.
type leased struct {
	token   int64
	queue   string
	expires time.Time // zero: unknown, read the record at the next rescue
	// deadline is when the job passes its MaxDuration, zero for none.
	deadline time.Time
	msg      jetstream.Msg
	done     bool // left its claim before its lease entry arrived
}

// owner is the state of the Backend that owns the namespace's claims: the
// ordered index of every ready job and the claims it knows of.
type owner struct {
	b        *Backend
	rev      uint64 // revision of the owner lease
	consumer jetstream.Consumer
	cons     jetstream.ConsumeContext
	subs     []*nats.Subscription

	mu     sync.Mutex
	ready  map[string]*btree.BTreeG[readyKey] // queue -> ready jobs
	held   map[string]*held                   // job id -> its ready entry
	leases map[string]*leased                 // job id -> its claim
	// broken is set when an entry cannot be decoded: the owner then
	// refuses every claim and rescue pass instead of skipping the entry.
	broken error
	// handled is the consumer sequence of the newest delivery handled.
	handled uint64
	// gone holds, per job, the revision of an entry this owner took into
	// its index before the stream delivered it and has used up since: the
	// delivery is acknowledged when it comes.
	gone map[string]uint64

	stopOnce sync.Once
	stopCh   chan struct{}
	wg       sync.WaitGroup
}

// owner returns this Backend's owner state, or nil.
func (b *Backend) owner() *owner {
	b.ownMu.Lock()
	defer b.ownMu.Unlock()
	return b.own
}

// tryOwn makes this Backend the owner when the namespace has none or its
// owner's lease expired by the server's time. It returns the owner state,
// or nil when another process owns the namespace.
func (b *Backend) tryOwn(ctx context.Context) (*owner, error) {
	b.ownMu.Lock()
	defer b.ownMu.Unlock()
	if b.own != nil {
		return b.own, nil
	}
	if err := b.isClosed(); err != nil {
		return nil, err
	}
	m, err := b.getMsg(ctx, b.ownerSubj())
	expect := int64(0)
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
	case err != nil:
		return nil, fmt.Errorf("natsq: read the owner lease: %w", err)
	default:
		var cur ownerRecord
		if err := json.Unmarshal(m.Data, &cur); err != nil {
			return nil, corrupt("owner lease", err)
		}
		if cur.Origin != b.origin && b.now().Before(m.Time.Add(ownerTTL)) {
			return nil, nil
		}
		expect = int64(m.Sequence)
	}
	data, _ := json.Marshal(ownerRecord{Origin: b.origin})
	rev, err := b.put(ctx, b.ownerSubj(), data, expect)
	if errors.Is(err, errConflict) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	o := &owner{b: b, rev: rev, ready: map[string]*btree.BTreeG[readyKey]{}, held: map[string]*held{},
		leases: map[string]*leased{}, gone: map[string]uint64{}, stopCh: make(chan struct{})}
	if err := o.start(ctx); err != nil {
		o.stop()
		return nil, err
	}
	b.own = o
	b.log.Info("owns the namespace's claims")
	return o, nil
}

// start loads every entry of the work-queue stream through a fresh
// consumer, then serves claims.
func (o *owner) start(ctx context.Context) error {
	b := o.b
	const name = "owner"
	if _, err := again(ctx, func() (struct{}, error) { return struct{}{}, b.js.DeleteConsumer(ctx, rqStream(b.ns), name) }); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return fmt.Errorf("natsq: reset the owner consumer: %w", err)
	}
	cons, err := again(ctx, func() (jetstream.Consumer, error) {
		return b.rq.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: name, AckPolicy: jetstream.AckExplicitPolicy,
			AckWait: 7 * 24 * time.Hour, MaxAckPending: -1, DeliverPolicy: jetstream.DeliverAllPolicy, MaxDeliver: -1})
	})
	if err != nil {
		return fmt.Errorf("natsq: owner consumer: %w", err)
	}
	// Load what the stream holds before serving, so that the first claim
	// sees every ready job: fetch until the consumer has nothing left to
	// deliver.
	for attempt := 0; ; attempt++ {
		batch, err := again(ctx, func() (jetstream.MessageBatch, error) { return cons.FetchNoWait(4096) })
		if err != nil {
			return fmt.Errorf("natsq: load entries: %w", err)
		}
		n := 0
		for m := range batch.Messages() {
			o.handle(m)
			n++
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) && !retryable(err) {
			return fmt.Errorf("natsq: load entries: %w", err)
		}
		if n > 0 {
			continue
		}
		info, err := again(ctx, func() (*jetstream.ConsumerInfo, error) { return cons.Info(ctx) })
		if err != nil {
			return fmt.Errorf("natsq: load entries: %w", err)
		}
		if info.NumPending == 0 {
			break
		}
		if attempt > 500 {
			return fmt.Errorf("natsq: load entries: %d still pending", info.NumPending)
		}
		select {
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
			return fmt.Errorf("natsq: load entries: %w", ctx.Err())
		}
	}
	o.consumer = cons
	cc, err := cons.Consume(o.handle, jetstream.PullMaxMessages(1024))
	if err != nil {
		return fmt.Errorf("natsq: consume entries: %w", err)
	}
	o.cons = cc
	for subj, h := range map[string]nats.MsgHandler{b.rpcSubj(): o.serve, b.doneSubj(): o.onDone} {
		sub, err := b.nc.Subscribe(subj, h)
		if err != nil {
			return fmt.Errorf("natsq: subscribe %s: %w", subj, err)
		}
		o.subs = append(o.subs, sub)
	}
	o.wg.Add(1)
	go o.renew()
	return nil
}

// stop gives up the ownership.
func (o *owner) stop() {
	o.stopOnce.Do(func() {
		close(o.stopCh)
		for _, s := range o.subs {
			_ = s.Unsubscribe()
		}
		if o.cons != nil {
			o.cons.Stop()
		}
		o.wg.Wait()
	})
}

// renew keeps the owner lease, and gives up the ownership when another
// process took it.
func (o *owner) renew() {
	defer o.wg.Done()
	b := o.b
	t := time.NewTicker(time.Second)
	defer t.Stop()
	sweep := time.NewTicker(15 * time.Second)
	defer sweep.Stop()
	for {
		select {
		case <-o.stopCh:
			return
		case <-sweep.C:
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			if err := o.sweep(ctx); err != nil {
				b.log.Warn("sweep", "err", err)
			}
			cancel()
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), b.opts.RequestTimeout)
			data, _ := json.Marshal(ownerRecord{Origin: b.origin})
			rev, err := b.put(ctx, b.ownerSubj(), data, int64(o.rev))
			cancel()
			switch {
			case err == nil:
				o.rev = rev
			case errors.Is(err, errConflict):
				b.log.Warn("lost the namespace's claims to another process")
				go o.resign()
				return
			default:
				b.log.Warn("renewing the owner lease", "err", err)
			}
		}
	}
}

// resign stops o if it is still this Backend's owner state.
func (o *owner) resign() {
	b := o.b
	b.ownMu.Lock()
	if b.own == o {
		b.own = nil
	}
	b.ownMu.Unlock()
	o.stop()
}

// handle takes one delivered entry into the index.
func (o *owner) handle(m jetstream.Msg) {
	b := o.b
	o.mu.Lock()
	defer o.mu.Unlock()
	if meta, err := m.Metadata(); err == nil && meta.Sequence.Consumer > o.handled {
		o.handled = meta.Sequence.Consumer
	}
	switch m.Subject() {
	case b.readySubj():
		var e readyEntry
		if err := json.Unmarshal(m.Data(), &e); err != nil || e.Rec == nil || !e.Rec.Job.State.Valid() {
			o.breakLocked(m, err)
			return
		}
		o.holdLocked(e.Rec, e.Rev, m)
	case b.leaseSubj():
		var e leaseEntry
		if err := json.Unmarshal(m.Data(), &e); err != nil || e.ID == "" {
			o.breakLocked(m, err)
			return
		}
		l := o.leases[e.ID]
		switch {
		case l == nil:
			o.leases[e.ID] = &leased{token: e.Token, msg: m}
		case l.token > e.Token:
			_ = m.Ack()
		case l.token == e.Token && l.done:
			_ = m.Ack()
			delete(o.leases, e.ID)
		case l.token == e.Token:
			l.msg = m
		default:
			if l.msg != nil {
				_ = l.msg.Ack()
			}
			o.leases[e.ID] = &leased{token: e.Token, msg: m}
		}
	default:
		_ = m.Ack()
	}
}

// catchUp waits until the owner has handled every entry the stream held
// when it was called (at most a few seconds), so that a claim that found
// nothing sees what other processes stored just before it.
func (o *owner) catchUp(ctx context.Context) error {
	for attempt := 0; attempt < 1000; attempt++ {
		info, err := again(ctx, func() (*jetstream.ConsumerInfo, error) { return o.consumer.Info(ctx) })
		if err != nil {
			return fmt.Errorf("natsq: owner consumer: %w", err)
		}
		o.mu.Lock()
		handled := o.handled
		o.mu.Unlock()
		if info.NumPending == 0 && handled >= info.Delivered.Consumer {
			return nil
		}
		select {
		case <-time.After(2 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// breakLocked stops the owner for an entry it cannot decode: claims and
// rescue passes fail with an error wrapping core.ErrInvalidState until the
// entry is removed from the stream and the owner restarts.
func (o *owner) breakLocked(m jetstream.Msg, err error) {
	meta, _ := m.Metadata()
	var seq uint64
	if meta != nil {
		seq = meta.Sequence.Stream
	}
	if err == nil {
		err = errors.New("fields missing")
	}
	if o.broken == nil {
		o.broken = fmt.Errorf("natsq: %w: entry %d of stream %s cannot be decoded (%v); the namespace hands out no claims until it is removed",
			core.ErrInvalidState, seq, rqStream(o.b.ns), err)
		o.b.log.Error("claims stopped", "err", o.broken)
	}
}

// brokenErr returns the error that stopped the owner, if any.
func (o *owner) brokenErr() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.broken
}

// holdLocked takes the entry of rec at rev into the index. m is its
// delivery, or nil when this owner published it and takes it in before the
// stream delivers it.
func (o *owner) holdLocked(rec *record, rev uint64, m jetstream.Msg) {
	id := rec.Job.ID
	if g, ok := o.gone[id]; ok && g >= rev {
		if m != nil {
			_ = m.Ack()
			if g == rev {
				delete(o.gone, id)
			}
		}
		return
	}
	if cur := o.held[id]; cur != nil {
		switch {
		case cur.rev == rev:
			if cur.msg == nil {
				cur.msg = m
			} else if m != nil {
				_ = m.Ack()
			}
			return
		case cur.rev > rev:
			if m != nil {
				_ = m.Ack()
			}
			return
		}
		o.unholdLocked(cur)
		o.ackLocked(cur)
	}
	h := &held{rec: rec, rev: rev, msg: m, key: readyKey{rec.Job.Priority, rec.Job.RunAt.UnixMicro(), id}}
	tree := o.ready[rec.Job.Queue]
	if tree == nil {
		tree = btree.NewG(32, readyLess)
		o.ready[rec.Job.Queue] = tree
	}
	tree.ReplaceOrInsert(h.key)
	o.held[id] = h
}

// ackLocked acknowledges the delivery of h, or, when the stream has not
// delivered it yet, notes that it is used up.
func (o *owner) ackLocked(h *held) {
	if h.msg != nil {
		_ = h.msg.Ack()
		return
	}
	if g, ok := o.gone[h.rec.Job.ID]; !ok || g < h.rev {
		o.gone[h.rec.Job.ID] = h.rev
	}
}

// ack is ackLocked for callers without the lock.
func (o *owner) ack(h *held) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ackLocked(h)
}

func (o *owner) unholdLocked(h *held) {
	if tree := o.ready[h.rec.Job.Queue]; tree != nil {
		tree.Delete(h.key)
	}
	delete(o.held, h.rec.Job.ID)
}

// onDone acknowledges the lease entries of jobs that left their claims.
func (o *owner) onDone(m *nats.Msg) {
	var n doneNotice
	if json.Unmarshal(m.Data, &n) != nil {
		return
	}
	o.noted(n.Items)
}

// noted takes in the ends and expiry moves of claims.
func (o *owner) noted(items []leaseEntry) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, it := range items {
		if it.Expires.IsZero() {
			o.leftClaimLocked(it.ID, it.Token)
		} else if l := o.leases[it.ID]; l != nil && l.token == it.Token {
			l.expires = it.Expires
		}
	}
}

// leftClaimLocked forgets the claim of job id under token.
func (o *owner) leftClaimLocked(id string, token int64) {
	l := o.leases[id]
	if l == nil || l.token != token {
		return
	}
	if l.msg == nil {
		l.done = true
		return
	}
	_ = l.msg.Ack()
	delete(o.leases, id)
}

// rpcRequest is a claim or rescue pass sent to the owner.
type rpcRequest struct {
	Claim  *core.ClaimRequest  `json:"claim,omitempty"`
	Rescue *core.RescueRequest `json:"rescue,omitempty"`
}

type rpcReply struct {
	Jobs   []core.Job        `json:"jobs,omitempty"`
	Rescue core.RescueResult `json:"rescue"`
	Err    *wireError        `json:"err,omitempty"`
}

// serve answers a claim or rescue request of another process.
func (o *owner) serve(m *nats.Msg) {
	var req rpcRequest
	var rep rpcReply
	ctx, cancel := context.WithTimeout(context.Background(), o.b.opts.RequestTimeout)
	defer cancel()
	err := o.brokenErr()
	switch {
	case err != nil:
	case json.Unmarshal(m.Data, &req) != nil:
		err = fmt.Errorf("%w: undecodable request", core.ErrInvalidArgument)
	case req.Claim != nil:
		rep.Jobs, err = o.claim(ctx, *req.Claim)
	case req.Rescue != nil:
		rep.Rescue, err = o.rescue(ctx, *req.Rescue)
	}
	rep.Err = toWire(err)
	data, _ := json.Marshal(rep)
	_ = m.Respond(data)
}

// call sends req to the namespace's owner, becoming the owner first when
// there is none.
func (b *Backend) call(ctx context.Context, req rpcRequest) (rpcReply, error) {
	data, err := json.Marshal(req)
	if err != nil {
		return rpcReply{}, err
	}
	for attempt := 0; ; attempt++ {
		if err := b.isClosed(); err != nil {
			return rpcReply{}, err
		}
		if o := b.owner(); o != nil {
			return o.local(ctx, req)
		}
		rctx, cancel := context.WithTimeout(ctx, b.opts.RequestTimeout)
		msg, err := b.nc.RequestWithContext(rctx, b.rpcSubj(), data)
		cancel()
		if err == nil {
			var rep rpcReply
			if err := json.Unmarshal(msg.Data, &rep); err != nil {
				return rpcReply{}, corrupt("owner reply", err)
			}
			return rep, fromWire(rep.Err)
		}
		if ctx.Err() != nil {
			return rpcReply{}, fmt.Errorf("natsq: waiting for the owner: %w", ctx.Err())
		}
		if !errors.Is(err, nats.ErrNoResponders) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, nats.ErrTimeout) {
			return rpcReply{}, fmt.Errorf("natsq: request to the owner: %w", err)
		}
		if _, err := b.tryOwn(ctx); err != nil {
			return rpcReply{}, err
		}
		if attempt > 0 {
			select {
			case <-time.After(min(time.Duration(attempt)*50*time.Millisecond, time.Second)):
			case <-ctx.Done():
				return rpcReply{}, fmt.Errorf("natsq: waiting for the owner: %w", ctx.Err())
			}
		}
	}
}

func (o *owner) local(ctx context.Context, req rpcRequest) (rpcReply, error) {
	var rep rpcReply
	err := o.brokenErr()
	switch {
	case err != nil:
	case req.Claim != nil:
		rep.Jobs, err = o.claim(ctx, *req.Claim)
	case req.Rescue != nil:
		rep.Rescue, err = o.rescue(ctx, *req.Rescue)
	}
	return rep, err
}

// wireError carries an error to another process with its sentinel.
type wireError struct {
	Kind  string `json:"kind"`
	Msg   string `json:"msg"`
	Index int    `json:"index,omitempty"`
	Batch bool   `json:"batch,omitempty"`
}

var sentinels = map[string]error{
	"not_found": core.ErrNotFound, "lease_lost": core.ErrLeaseLost, "idempotency": core.ErrIdempotencyConflict,
	"rate_limited": core.ErrRateLimited, "invalid_argument": core.ErrInvalidArgument, "invalid_state": core.ErrInvalidState,
	"unsupported": core.ErrUnsupported, "closed": core.ErrClosed,
}

func toWire(err error) *wireError {
	if err == nil {
		return nil
	}
	w := &wireError{Msg: err.Error()}
	var be *core.BatchError
	if errors.As(err, &be) {
		w.Batch, w.Index = true, be.Index
	}
	for k, s := range sentinels {
		if errors.Is(err, s) {
			w.Kind = k
		}
	}
	return w
}

// remoteError is an error the owner returned.
type remoteError struct {
	msg      string
	sentinel error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.sentinel }

func fromWire(w *wireError) error {
	if w == nil {
		return nil
	}
	var err error = &remoteError{msg: w.Msg, sentinel: sentinels[w.Kind]}
	if w.Batch {
		err = &core.BatchError{Index: w.Index, Err: err}
	}
	return err
}
