package main

import (
	"testing"

	"github.com/boson-go/boson/examples/internal/extest"
)

func TestMetrics(t *testing.T) {
	out := extest.Run(t, run)
	extest.Contains(t, out,
		"# worker worker-1\n",
		`boson_claimed_total{queue="emails"} 5`,
		`boson_executions_total{queue="emails"} 5`,
		`boson_completed_total{queue="emails"} 3`,
		`boson_failed_total{queue="emails"} 2`,
		`boson_executions_total{queue="images"} 4`,
		`boson_completed_total{queue="images"} 2`,
		`boson_failed_total{queue="images"} 1`,
		`boson_suspended_total{queue="images"} 1`,
		"total: 9 executions, 5 completed, 3 failed, 1 suspended, busy true",
		"task send-email: jobs succeeded=3 failed=1; runs succeeded=3 failed=2",
		"task resize-image: jobs succeeded=2 failed=1; runs succeeded=2 failed=1",
	)
}
