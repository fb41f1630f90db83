package redisq

import (
	"context"
	"time"

	"github.com/boson-go/boson/core"
)

// Claim takes up to req.Limit due jobs of one queue in one script call. See
// core.QueueBackend.
func (b *Backend) Claim(ctx context.Context, req core.ClaimRequest) ([]core.Job, error) {
	if err := b.check("claim"); err != nil {
		return nil, err
	}
	if err := core.ValidateClaim(req, b.opts.Limits); err != nil {
		return nil, err
	}
	res, err := b.run(ctx, scriptClaim, req.Queue, req.WorkerID, req.Limit, durMicros(req.LeaseTTL))
	if err != nil {
		return nil, wrap("claim", err)
	}
	_, rest, err := reply(res, map[string]int{"ok": 2})
	if err != nil {
		return nil, err
	}
	jobs := make([]core.Job, 0, len(rest)-2)
	for _, v := range rest[2:] {
		j, err := decodeScriptJob(req.Queue, v, rest[1])
		if err != nil {
			return nil, err
		}
		b.remember(j.ID, j.Queue)
		jobs = append(jobs, j)
	}
	return jobs, nil
}

// durMicros converts a positive duration to whole microseconds, rounding up
// so that a positive duration never becomes zero.
func durMicros(d time.Duration) int64 {
	us := int64(d / time.Microsecond)
	if d%time.Microsecond != 0 {
		us++
	}
	return us
}
