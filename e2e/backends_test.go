package e2e_test

import (
	"context"
	"path/filepath"
	"strings"
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
	// Durable: jobs survive the process, so the kill test applies. Open
	// opens the store named by locator (a file, schema, prefix or
	// namespace) from any process; the owner removes it at cleanup.
	Durable bool
	Open    func(t testing.TB, clock core.Clock, locator string, owner bool) core.QueueBackend
	// Locator returns a fresh locator for Open.
	Locator func(t testing.TB) string
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
	{
		Name: "sqlite", New: newSQLiteBackend, TxEnqueue: true, BeginTx: beginSQLiteTx,
		Durable: true, Open: openSQLiteBackend, Locator: func(t testing.TB) string { return filepath.Join(t.TempDir(), "boson.db") },
	},
	{
		Name: "postgres", New: newPostgresBackend, TxEnqueue: true, BeginTx: beginPostgresTx,
		Durable: true, Open: openPostgresBackend, Locator: func(testing.TB) string { return strings.ReplaceAll(uniqueName("p"), "-", "_") },
	},
	{
		Name: "redis", New: newRedisBackend,
		Durable: true, Open: openRedisBackend, Locator: func(testing.TB) string { return uniqueName("r") },
	},
	{
		Name: "nats", New: newNATSBackend,
		Durable: true, Open: openNATSBackend, Locator: func(testing.TB) string { return uniqueName("n") },
	},
}
