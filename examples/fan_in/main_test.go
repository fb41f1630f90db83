package main

import (
	"testing"

	"github.com/boson-go/boson/examples/internal/extest"
)

func TestFanIn(t *testing.T) {
	out := extest.Run(t, run)
	extest.Contains(t, out,
		"report: section 1, section 2, section 3, section 4, section 5, section 6, section 7, section 8",
		"report: the parent ran 2 times (parked, then woken); the sections ran on the 2 slots, never more than 2 at once: true",
		"report: wait: last waited on 8 jobs (all); 0 had not ended when the wait was left",
		"quote: 42.00 EUR from us; the other mirrors were cancelled",
		"gather: wait: waiting on 3 of 3 jobs (all); cancelling the job cancels them",
		"gather: cancelled while parked; 3 of 3 children cancelled with it",
		"done",
	)
}
