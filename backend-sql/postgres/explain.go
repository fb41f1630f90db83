package postgres

import (
	"context"
	"time"

	"github.com/boson-go/boson/core"
)

// ExplainClaim returns the server's plan of the claim statement that the
// next Claim of up to limit jobs of queue would run (from the head of the
// jobs_claim index, or after the queue's claim cursor), so that an
// operator can check that it walks the index. With analyze the statement
// really runs, inside a transaction that is rolled back, and the plan
// shows actual timings and buffer counts. It changes nothing, not even
// the cursor.
func (b *Backend) ExplainClaim(ctx context.Context, queue string, limit int, analyze bool) (string, error) {
	req := core.ClaimRequest{Queue: queue, WorkerID: "explain", Limit: limit, LeaseTTL: time.Minute}
	if err := core.ValidateClaim(req, b.e.Limits()); err != nil {
		return "", err
	}
	return b.e.ClaimPlan(ctx, req, analyze)
}
