package main

import (
	"testing"

	"github.com/boson-go/boson/examples/internal/extest"
)

func TestDeclaredQueues(t *testing.T) {
	out := extest.Run(t, run)
	extest.Contains(t, out,
		"queue emails: created=true retention=168h0m0s",
		"queue reports: created=true retention=720h0m0s",
		"queue emails: created=false retention=168h0m0s",
		"queue reports: created=false retention=720h0m0s",
		"spawn to emials: refused (queue not declared)",
		"emails: sent to ada@example.com",
		"drifted settings for emails: refused (queue declared with another config)",
		"emails keeps retention=168h0m0s",
	)
}
