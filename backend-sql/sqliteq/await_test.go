package sqliteq_test

import (
	"testing"

	"github.com/boson-go/boson/backend-sql/internal/sqltest"
	"github.com/boson-go/boson/backend-sql/sqliteq"
)

func TestAwait(t *testing.T) {
	sqltest.Await(t, func(t *testing.T) sqltest.AwaitBackend { return newBackend(t, sqliteq.Options{}) })
}
