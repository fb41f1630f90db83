package e2e_test

import (
	"context"
	"testing"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/core"
)

// backendFactory describes one backend the matrix runs on.
type backendFactory struct {
	Name string
	// New returns a fresh backend, isolated from every other one New
	// returned, that decides time with clock. It registers its own
	// cleanup with t.Cleanup.
	New func(t testing.TB, clock core.Clock) core.QueueBackend
	// TxEnqueue: the backend implements core.TxEnqueuer; BeginTx opens a
	// transaction of the store's own type on the store behind b.
	TxEnqueue bool
	BeginTx   func(ctx context.Context, t testing.TB, b core.QueueBackend) (tx any, commit, rollback func() error)
	// Durable: jobs survive the process (the kill test applies).
	Durable bool
}

// backends lists every backend the matrix runs on. Add one entry per
// backend that has landed.
var backends = []backendFactory{
	{
		Name: "mem",
		New: func(t testing.TB, clock core.Clock) core.QueueBackend {
			b := mem.New(mem.Options{Clock: clock, Logger: quiet})
			t.Cleanup(func() { _ = b.Close() })
			return b
		},
	},
	{Name: "sqlite", New: newSQLiteBackend, Durable: true, TxEnqueue: true, BeginTx: beginSQLiteTx},
	{Name: "postgres", New: newPostgresBackend, Durable: true, TxEnqueue: true, BeginTx: beginPostgresTx},
	{Name: "redis", New: newRedisBackend, Durable: true},
	{Name: "nats", New: newNATSBackend, Durable: true},
}
