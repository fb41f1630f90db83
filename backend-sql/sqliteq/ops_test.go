package sqliteq_test

import (
	"context"
	"testing"

	"github.com/boson-go/boson/backend-sql/internal/sqltest"
	"github.com/boson-go/boson/backend-sql/sqliteq"
	"github.com/boson-go/boson/core"
)

func TestOps(t *testing.T) {
	sqltest.Ops(t, sqltest.OpsEnv{
		New: func(t *testing.T, clock core.Clock) sqltest.OpsBackend {
			return newBackend(t, sqliteq.Options{Clock: clock})
		},
		Rows: func(t *testing.T, b sqltest.OpsBackend, table, jobID string) int {
			var n int
			if err := b.(*sqliteq.Backend).DB().QueryRowContext(context.Background(), `SELECT count(*) FROM `+table+` WHERE job_id = ?`, jobID).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		},
	})
}
