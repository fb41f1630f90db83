package boson_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

func TestCancelRetryTxUnsupported(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	h, err := boson.Spawn(ctx, e.client, childTask, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.CancelTx(ctx, struct{}{}, h.ID(), ""); !errors.Is(err, core.ErrUnsupported) {
		t.Fatalf("Client.CancelTx on mem: %v, want ErrUnsupported", err)
	}
	if _, err := e.client.RetryTx(ctx, struct{}{}, h.ID()); !errors.Is(err, core.ErrUnsupported) {
		t.Fatalf("Client.RetryTx on mem: %v, want ErrUnsupported", err)
	}
	if err := h.CancelTx(ctx, struct{}{}, ""); !errors.Is(err, core.ErrUnsupported) {
		t.Fatalf("Handle.CancelTx on mem: %v, want ErrUnsupported", err)
	}
	if err := h.RetryTx(ctx, struct{}{}); !errors.Is(err, core.ErrUnsupported) {
		t.Fatalf("Handle.RetryTx on mem: %v, want ErrUnsupported", err)
	}
	for name, call := range map[string]func() error{
		"Client.CancelTx": func() error { _, err := e.client.CancelTx(ctx, nil, h.ID(), ""); return err },
		"Client.RetryTx":  func() error { _, err := e.client.RetryTx(ctx, nil, h.ID()); return err },
		"Handle.CancelTx": func() error { return h.CancelTx(ctx, nil, "") },
		"Handle.RetryTx":  func() error { return h.RetryTx(ctx, nil) },
	} {
		if err := call(); !errors.Is(err, core.ErrInvalidArgument) {
			t.Errorf("%s with a nil tx: %v, want ErrInvalidArgument", name, err)
		}
	}
	if j := e.job(h.ID()); j.State != core.StateQueued {
		t.Fatalf("job is %s after refused transactional calls, want queued", j.State)
	}
}

// token is the transaction that tokenTx accepts.
type token struct{ n int }

// tokenTx gives a mem backend CancelTx and RetryTx that accept only a
// *token and then act at once. It has no transaction of its own: it only
// shows which backend the client handed the call to.
type tokenTx struct {
	*mem.Backend
	tx *token
}

func (b tokenTx) CancelTx(ctx context.Context, tx any, jobID, reason string) (core.Job, error) {
	if tx != any(b.tx) {
		return core.Job{}, fmt.Errorf("%w: tx %v", core.ErrInvalidArgument, tx)
	}
	return b.Cancel(ctx, jobID, reason)
}

func (b tokenTx) RetryTx(ctx context.Context, tx any, jobID string) (core.Job, error) {
	if tx != any(b.tx) {
		return core.Job{}, fmt.Errorf("%w: tx %v", core.ErrInvalidArgument, tx)
	}
	return b.Retry(ctx, jobID)
}

func TestCancelRetryTxAcrossBackends(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	m := mem.New(mem.Options{Clock: e.clock, Logger: quiet})
	t.Cleanup(func() { _ = m.Close() })
	tx := &token{1}
	other := tokenTx{Backend: m, tx: tx}
	r := core.NewRouter(e.b)
	if err := r.Register("other", other); err != nil {
		t.Fatal(err)
	}
	if err := r.Route("far", "other"); err != nil {
		t.Fatal(err)
	}
	c, err := boson.NewRouterClient(r, boson.ClientOptions{Clock: e.clock, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	near, _ := boson.Spawn(ctx, c, childTask, 1)
	far, err := boson.Spawn(ctx, c, childTask, 2, boson.WithQueue("far"))
	if err != nil {
		t.Fatal(err)
	}
	j, err := c.CancelTx(ctx, tx, far.ID(), "withdrawn")
	if err != nil || j.State != core.StateCancelled || j.LastError != "withdrawn" {
		t.Fatalf("CancelTx of the far job = %s %q, %v; want cancelled on the other backend", j.State, j.LastError, err)
	}
	if j, err = c.RetryTx(ctx, tx, far.ID()); err != nil || j.State != core.StateQueued {
		t.Fatalf("RetryTx of the far job = %s, %v; want queued", j.State, err)
	}
	if err := far.CancelTx(ctx, tx, "again"); err != nil {
		t.Fatalf("Handle.CancelTx of the far job: %v", err)
	}
	if _, err := c.CancelTx(ctx, tx, near.ID(), ""); !errors.Is(err, core.ErrUnsupported) {
		t.Fatalf("CancelTx of a job on the default mem backend: %v, want ErrUnsupported", err)
	}
	if _, err := c.RetryTx(ctx, tx, core.NewID(e.clock.Now())); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("RetryTx of an unknown job: %v, want ErrNotFound", err)
	}
}
