package main

import (
	"path/filepath"
	"testing"

	"github.com/boson-go/boson/examples/internal/extest"
)

func TestRouter(t *testing.T) {
	out := extest.Run(t, run, "-db", filepath.Join(t.TempDir(), "queue.db"))
	extest.Contains(t, out,
		"queue notifications -> backend mem   : pushed your parcel is on its way",
		"queue invoices      -> backend sqlite: invoice over 49.99 EUR",
		"client.GetJob finds the invoice job: issue-invoice, succeeded",
		"listed queue invoices: 1 succeeded",
		"listed queue notifications: 1 succeeded",
	)
	extest.Lacks(t, out, "unclear")
}
