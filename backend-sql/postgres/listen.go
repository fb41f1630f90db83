package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// startListener runs the LISTEN connection until Close.
func (b *Backend) startListener() {
	ctx, cancel := context.WithCancel(context.Background())
	b.stopListen = cancel
	b.listenDone = make(chan struct{})
	go b.listen(ctx)
}

// closeListener stops the listener, if it runs, and waits for it.
func (b *Backend) closeListener() {
	b.listenOnce.Do(func() {}) // a later Subscribe must not start one
	if b.stopListen != nil {
		b.stopListen()
		<-b.listenDone
	}
}

// listen keeps one connection listening on the backend's channel. After
// every (re)connection it wakes every subscriber and makes the next
// claims start at the head of the claim index, because notifications
// sent while it was away are lost; between attempts it backs off up to
// five seconds.
func (b *Backend) listen(ctx context.Context) {
	defer close(b.listenDone)
	log := b.e.Logger()
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := b.listenOnceConn(ctx, func() { backoff = 100 * time.Millisecond })
		if ctx.Err() != nil {
			return
		}
		log.Warn("boson/postgres: listener connection lost; reconnecting", "err", err, "in", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

func (b *Backend) listenOnceConn(ctx context.Context, connected func()) error {
	conn, err := pgx.ConnectConfig(ctx, b.listenCfg.Copy())
	if err != nil {
		return err
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(closeCtx)
	}()
	if _, err := conn.Exec(ctx, `LISTEN "`+b.e.Channel()+`"`); err != nil {
		return err
	}
	connected()
	b.e.ResetClaimCursors()
	b.e.SignalAll()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		b.e.Notified(n.Payload)
	}
}
