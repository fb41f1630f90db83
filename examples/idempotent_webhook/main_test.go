package main

import (
	"testing"

	"github.com/boson-go/boson/examples/internal/extest"
)

func TestIdempotentWebhook(t *testing.T) {
	out := extest.Run(t, run)
	extest.Contains(t, out,
		"(reused=false)",
		"(reused=true, same task=true)",
		"tampered redelivery evt_1001: refused",
		"result: invoice INV-7 paid (4200 cents)",
		"late redelivery evt_1001: task",
		"done: 4 deliveries, 1 task stored, handler ran 1 time(s)",
	)
}
