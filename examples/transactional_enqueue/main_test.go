package main

import (
	"testing"

	"github.com/boson-go/boson/examples/internal/extest"
)

func TestTransactionalEnqueue(t *testing.T) {
	url := extest.PostgresURL(t)
	schema := extest.Name(t, "ex_tx")
	extest.DropNamespace(t, url, schema) // should the run stop half-way
	out := extest.Run(t, run, "-url", url, "-schema", schema)
	extest.Contains(t, out,
		"ada@example.com: user 1 and task spawned in the transaction; visible outside before commit: false",
		"ada@example.com: committing",
		"ada@example.com: welcome mail sent to ada@example.com",
		"bob@example.com: user 2 and task spawned in the transaction; visible outside before commit: false",
		"bob@example.com: fraud check rejected the card, rolling back",
		"bob@example.com: after rollback the task exists: false, the user exists: false",
		"done: 1 welcome task(s) succeeded, 1 stored in all",
	)
}
