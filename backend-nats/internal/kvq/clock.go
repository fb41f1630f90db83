package kvq

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// probe anchors the Backend's estimate of the server's time: it publishes
// to its own clock subject and reads the message back; the server stamped
// it while this process waited, so the stamp plus the monotonic time since
// the read is never ahead of the server's clock.
func (b *Backend) probe(ctx context.Context) error {
	if b.opts.DecisionClock != nil {
		return nil
	}
	subj := "bk." + b.ns + ".clk." + b.origin
	ctx, cancel := context.WithTimeout(ctx, b.opts.RequestTimeout)
	defer cancel()
	if _, err := b.js.Publish(ctx, subj, nil); err != nil {
		return fmt.Errorf("natsq: clock probe: %w", err)
	}
	m, err := b.getMsg(ctx, subj)
	if err != nil {
		return fmt.Errorf("natsq: clock probe: %w", err)
	}
	at := time.Now()
	b.clockMu.Lock()
	if m.Time.After(b.anchor) {
		b.anchor, b.anchorMono = m.Time.UTC(), at
	}
	b.clockMu.Unlock()
	return nil
}

// clockLoop refreshes the anchor every second and deletes the probe
// subject at Close.
func (b *Backend) clockLoop() {
	defer b.bg.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-b.closed:
			if b.opts.DecisionClock == nil {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				_ = b.kv.Purge(ctx, jetstream.WithPurgeSubject("bk."+b.ns+".clk."+b.origin))
				cancel()
			}
			return
		case <-t.C:
			ctx, cancel := b.untilClosed(context.Background())
			if err := b.probe(ctx); err != nil && b.isClosed() == nil {
				b.log.Debug("clock probe", "err", err)
			}
			cancel()
		}
	}
}

// now is the time every decision of this Backend is made at:
// DecisionClock's when it is set, else the estimate of the server's time.
func (b *Backend) now() time.Time {
	if b.opts.DecisionClock != nil {
		return b.opts.DecisionClock.Now().UTC().Truncate(time.Microsecond)
	}
	b.clockMu.Lock()
	t := b.anchor.Add(time.Since(b.anchorMono))
	b.clockMu.Unlock()
	return t.UTC().Truncate(time.Microsecond)
}
