package natsq

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/boson-go/boson/core"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// partsHeader lists, on the last message of a command too large for one
// message, the stream sequences of its leading parts.
const partsHeader = "Boson-Parts"

// exec appends c to the log and returns the outcome of applying it. The
// outcome is that of this replica, which every other replica reproduces.
// When exec returns an error other than one from the outcome, the command
// may or may not have been stored.
func (b *Backend) exec(ctx context.Context, c *command) (outcome, error) {
	if err := b.isClosed(); err != nil {
		return outcome{}, err
	}
	c.Origin = b.origin
	c.Req = b.reqSeq.Add(1)
	data, err := json.Marshal(c)
	if err != nil {
		return outcome{}, fmt.Errorf("natsq: encode command: %w", err)
	}
	w := &waiter{done: make(chan struct{})}
	b.pendMu.Lock()
	b.pending[c.Req] = w
	b.pendMu.Unlock()
	defer func() {
		b.pendMu.Lock()
		delete(b.pending, c.Req)
		b.pendMu.Unlock()
	}()
	seq, err := b.submit(ctx, data)
	if err != nil {
		return outcome{}, err
	}
	b.maybeCompact(seq)
	// Wait for the replica to reach the command. A replica that is busy
	// catching up may take long; only one that stops moving gives up.
	stall := 4 * b.opts.RequestTimeout
	timer := time.NewTimer(stall)
	defer timer.Stop()
	last := b.appliedSeq()
	for {
		select {
		case <-w.done:
			return w.out, nil
		case <-ctx.Done():
			return outcome{}, fmt.Errorf("natsq: command %d stored, waiting for it to apply: %w", seq, ctx.Err())
		case <-timer.C:
			if cur := b.appliedSeq(); cur > last {
				last = cur
				timer.Reset(stall)
				continue
			}
			return outcome{}, fmt.Errorf("natsq: command %d stored but the replica did not move for %v; its outcome is unknown", seq, stall)
		case <-b.closed:
			return outcome{}, fmt.Errorf("natsq: %w", core.ErrClosed)
		case <-b.brokenCh:
			return outcome{}, *b.broken.Load()
		}
	}
}

func (b *Backend) appliedSeq() uint64 {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.st.applied
}

// publish stores data as one command, split into parts when it exceeds
// the server's message size. It returns the sequence of the command's last
// message and whether the command fit in one message.
func (b *Backend) publish(ctx context.Context, id string, data []byte) (uint64, bool, error) {
	limit := b.msgLimit()
	var parts []string
	for n := 0; len(data) > limit; n++ {
		seq, err := b.publishOne(ctx, partSubject(b.opts.Namespace), data[:limit], id+".p"+strconv.Itoa(n), nil)
		if err != nil {
			return 0, false, err
		}
		parts = append(parts, strconv.FormatUint(seq, 10))
		data = data[limit:]
	}
	var hdr nats.Header
	if len(parts) > 0 {
		hdr = nats.Header{partsHeader: []string{strings.Join(parts, ",")}}
	}
	seq, err := b.publishOne(ctx, logSubject(b.opts.Namespace), data, id, hdr)
	return seq, len(parts) == 0, err
}

// msgLimit is the most command bytes one message carries.
func (b *Backend) msgLimit() int {
	return max(int(b.nc.MaxPayload())-16<<10, 16<<10)
}

// publishOne publishes one message, again under the same message id when
// the server does not answer, so that the stream stores it at most once.
func (b *Backend) publishOne(ctx context.Context, subject string, data []byte, id string, hdr nats.Header) (uint64, error) {
	var last error
	for attempt := 0; attempt < b.opts.PublishAttempts; attempt++ {
		if attempt > 0 {
			select {
			case <-time.After(time.Duration(attempt) * 200 * time.Millisecond):
			case <-ctx.Done():
				return 0, fmt.Errorf("natsq: publish command: %w (after %v)", ctx.Err(), last)
			case <-b.closed:
				return 0, fmt.Errorf("natsq: %w", core.ErrClosed)
			}
		}
		actx, cancel := context.WithTimeout(ctx, b.opts.RequestTimeout)
		ack, err := b.js.PublishMsg(actx, &nats.Msg{Subject: subject, Data: data, Header: hdr},
			jetstream.WithMsgID(id), jetstream.WithExpectStream(StreamName(b.opts.Namespace)))
		cancel()
		if err == nil {
			return ack.Sequence, nil
		}
		last = err
		if ctx.Err() != nil || !isTransient(err) {
			break
		}
		if attempt+1 < b.opts.PublishAttempts {
			b.log.Warn("publishing a command failed, trying again", "attempt", attempt+1, "err", err)
		}
	}
	return 0, fmt.Errorf("natsq: publish command: %w", last)
}

func (b *Backend) startConsumer(ctx context.Context, from uint64) error {
	cfg := jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy}
	if from > 1 {
		cfg = jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: from}
	}
	cons, err := b.js.OrderedConsumer(ctx, StreamName(b.opts.Namespace), cfg)
	if err != nil {
		return fmt.Errorf("natsq: consumer: %w", err)
	}
	cc, err := cons.Consume(b.handle, jetstream.PullMaxMessages(4096), jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		b.log.Debug("command consumer", "err", err)
	}))
	if err != nil {
		return fmt.Errorf("natsq: consume: %w", err)
	}
	b.cons = cc
	return nil
}

// handle applies one delivered message of the log.
func (b *Backend) handle(msg jetstream.Msg) {
	if b.broken.Load() != nil {
		return
	}
	meta, err := msg.Metadata()
	if err != nil {
		b.failStop(fmt.Errorf("natsq: %w: a log message has no metadata: %v", core.ErrInvalidState, err))
		return
	}
	seq := meta.Sequence.Stream
	b.mu.Lock()
	defer b.mu.Unlock()
	if seq <= b.st.applied {
		return
	}
	if seq > b.st.applied+1 {
		// The commands between were purged by a compaction: catch up from
		// the newest snapshot, which covers them.
		if !b.reloadLocked(seq) || seq <= b.st.applied {
			return
		}
	}
	if strings.HasSuffix(msg.Subject(), ".part") {
		b.st.parts[seq] = append([]byte(nil), msg.Data()...)
		b.advanceLocked(seq)
		return
	}
	data := msg.Data()
	if h := msg.Headers().Get(partsHeader); h != "" {
		var whole []byte
		for _, f := range strings.Split(h, ",") {
			ps, perr := strconv.ParseUint(f, 10, 64)
			p, ok := b.st.parts[ps]
			if perr != nil || !ok {
				b.failStopLocked(fmt.Errorf("natsq: %w: command %d names part %q, which the log does not hold", core.ErrInvalidState, seq, f))
				return
			}
			whole = append(whole, p...)
			delete(b.st.parts, ps)
		}
		data = append(whole, data...)
	}
	var c command
	if err := json.Unmarshal(data, &c); err != nil {
		b.failStopLocked(fmt.Errorf("natsq: %w: command %d cannot be decoded: %v", core.ErrInvalidState, seq, err))
		return
	}
	b.applyLocked(seq, &c, meta.Timestamp)
}

// applyLocked applies command c, stored at log position seq with the
// server's timestamp ts, hands its outcome to the waiting caller when this
// replica issued it, and wakes subscribers. A group of commands is applied
// one after the other, at the same position and time. A command that
// cannot be applied stops the replica (see failStopLocked) without moving
// its position.
func (b *Backend) applyLocked(seq uint64, c *command, ts time.Time) {
	b.st.decide(c, ts)
	b.lastTSAt = time.Now()
	if c.Op == opGroup {
		for i, raw := range c.Group {
			var sub command
			if err := json.Unmarshal(raw, &sub); err != nil {
				b.failStopLocked(fmt.Errorf("natsq: %w: command %d of the group at %d cannot be decoded: %v", core.ErrInvalidState, i, seq, err))
				return
			}
			if sub.Now.IsZero() {
				// The issuer left the time to the server: the group's message
				// timestamp. A DecisionClock issuer's command keeps its own.
				sub.Now, sub.serverTime = c.Now, true
			}
			if err := b.applyOne(&sub); err != nil {
				b.failStopLocked(fmt.Errorf("natsq: command %d of the group at %d: %w", i, seq, err))
				return
			}
		}
	} else if err := b.applyOne(c); err != nil {
		b.failStopLocked(fmt.Errorf("natsq: command at %d: %w", seq, err))
		return
	}
	for q := range b.st.touched {
		b.notify.signal(q)
		delete(b.st.touched, q)
	}
	// Parts of commands whose last message never came are dropped once the
	// log has moved far past them.
	if len(b.st.parts) > 0 {
		for ps := range b.st.parts {
			if ps+1_000_000 < seq {
				delete(b.st.parts, ps)
			}
		}
	}
	b.advanceLocked(seq)
}

func (b *Backend) applyOne(c *command) error {
	out, err := b.st.apply(c)
	if err != nil {
		return err
	}
	if c.Origin == b.origin {
		b.pendMu.Lock()
		if w := b.pending[c.Req]; w != nil {
			w.out = out
			close(w.done)
			delete(b.pending, c.Req)
		}
		b.pendMu.Unlock()
	}
	return nil
}

// failStop stops the replica for good: data it cannot decode, or a command
// it cannot apply, would leave it with a state no other replica shares, so
// it applies nothing more, and every call, the waiting ones included,
// fails with err (which wraps a core sentinel) until the Backend is closed
// and opened again.
func (b *Backend) failStop(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failStopLocked(err)
}

func (b *Backend) failStopLocked(err error) {
	if !b.broken.CompareAndSwap(nil, &err) {
		return
	}
	b.log.Error("replica stopped: the log holds what it cannot apply", "applied", b.st.applied, "err", err)
	close(b.brokenCh)
	b.pendMu.Lock()
	for req, w := range b.pending {
		w.out = outcome{err: err}
		close(w.done)
		delete(b.pending, req)
	}
	b.pendMu.Unlock()
}

func (b *Backend) advanceLocked(seq uint64) {
	b.st.applied = seq
	close(b.applyCh)
	b.applyCh = make(chan struct{})
}
