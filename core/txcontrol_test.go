package core_test

import (
	"context"
	"errors"
	"testing"

	"github.com/boson-go/boson/core"
)

// plainBackend offers no optional capability; its methods are never called.
type plainBackend struct{ core.QueueBackend }

// txBackend records what the helpers forward to it.
type txBackend struct {
	plainBackend
	calls []string
}

func (b *txBackend) CancelTx(_ context.Context, tx any, jobID, reason string) (core.Job, error) {
	b.calls = append(b.calls, "cancel "+tx.(string)+" "+jobID+" "+reason)
	return core.Job{ID: jobID, State: core.StateCancelled}, nil
}

func (b *txBackend) RetryTx(_ context.Context, tx any, jobID string) (core.Job, error) {
	b.calls = append(b.calls, "retry "+tx.(string)+" "+jobID)
	return core.Job{ID: jobID, State: core.StateQueued}, nil
}

func TestTxControlHelpers(t *testing.T) {
	ctx := context.Background()
	if _, err := core.CancelTx(ctx, plainBackend{}, "tx", "j", "r"); !errors.Is(err, core.ErrUnsupported) {
		t.Fatalf("CancelTx without TxController: %v, want core.ErrUnsupported", err)
	}
	if _, err := core.RetryTx(ctx, plainBackend{}, "tx", "j"); !errors.Is(err, core.ErrUnsupported) {
		t.Fatalf("RetryTx without TxController: %v, want core.ErrUnsupported", err)
	}
	b := &txBackend{}
	if j, err := core.CancelTx(ctx, b, "tx1", "j1", "why"); err != nil || j.ID != "j1" || j.State != core.StateCancelled {
		t.Fatalf("CancelTx = %+v, %v", j, err)
	}
	if j, err := core.RetryTx(ctx, b, "tx2", "j2"); err != nil || j.ID != "j2" || j.State != core.StateQueued {
		t.Fatalf("RetryTx = %+v, %v", j, err)
	}
	want := []string{"cancel tx1 j1 why", "retry tx2 j2"}
	if len(b.calls) != 2 || b.calls[0] != want[0] || b.calls[1] != want[1] {
		t.Fatalf("forwarded %q, want %q", b.calls, want)
	}
}
