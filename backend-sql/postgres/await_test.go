package postgres_test

import (
	"testing"

	"github.com/boson-go/boson/backend-sql/internal/sqltest"
	"github.com/boson-go/boson/backend-sql/postgres"
)

func TestAwait(t *testing.T) {
	sqltest.Await(t, func(t *testing.T) sqltest.AwaitBackend { return newBackend(t, postgres.Options{}) })
}
