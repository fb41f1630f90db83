package sqliteq_test

import (
	"testing"

	"github.com/boson-go/boson/backend-sql/internal/sqltest"
	"github.com/boson-go/boson/backend-sql/sqliteq"
)

func TestTxCancelRacesWorker(t *testing.T) {
	b := newBackend(t, sqliteq.Options{})
	sqltest.TxCancelRacesWorker(t, b, func() (any, func() error, func() error) {
		tx, err := b.BeginTx(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tx.Rollback() })
		return tx, tx.Commit, tx.Rollback
	})
}
