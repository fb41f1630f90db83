package main

import (
	"testing"

	"github.com/boson-go/boson/examples/internal/extest"
)

func TestCrossQueueWorkflow(t *testing.T) {
	out := extest.Run(t, run)
	extest.Contains(t, out,
		// The child may run before its parent prints that it awaits it.
		"[orders] attempt 1 of order A-17\n",
		"[orders] child invoices (reused=false), awaiting it\n",
		"[invoices] render invoice of order A-17",
		"[orders] got invoice-A-17.pdf (129.50 EUR)",
		"[orders] attempt 2 of order A-17\n  [orders] child invoices (reused=true), awaiting it\n  [orders] got invoice-A-17.pdf",
		"result: mailed invoice-A-17.pdf (129.50 EUR); invoice rendered 1 time(s)",
		"same-queue await: failed: ",
		"cannot await a task in the same queue",
	)
}
