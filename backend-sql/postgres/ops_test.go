package postgres_test

import (
	"context"
	"testing"

	"github.com/boson-go/boson/backend-sql/internal/sqltest"
	"github.com/boson-go/boson/backend-sql/postgres"
	"github.com/boson-go/boson/core"
)

func TestOps(t *testing.T) {
	sqltest.Ops(t, sqltest.OpsEnv{
		New: func(t *testing.T, clock core.Clock) sqltest.OpsBackend {
			return newBackend(t, postgres.Options{Clock: clock})
		},
		Rows: func(t *testing.T, b sqltest.OpsBackend, table, jobID string) int {
			pb := b.(*postgres.Backend)
			var n int
			if err := pb.Pool().QueryRow(context.Background(), `SELECT count(*) FROM "`+pb.Schema()+`".`+table+` WHERE job_id = $1`, jobID).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		},
	})
}
