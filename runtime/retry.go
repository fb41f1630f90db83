package boson

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/boson-go/boson/core"
)

// DefaultRetry is the backoff used where neither the spawn, the task config
// nor the worker chose one: 30 seconds before the second attempt, doubling
// each time, capped at one hour, each delay shortened by up to 10% at random.
var DefaultRetry = core.RetryPolicy{
	Initial: 30 * time.Second,
	Factor:  2,
	Max:     time.Hour,
	Jitter:  0.1,
}

// mergeRetry fills the zero fields of p from def.
func mergeRetry(p, def core.RetryPolicy) core.RetryPolicy {
	if p.Initial == 0 {
		p.Initial = def.Initial
	}
	if p.Factor == 0 {
		p.Factor = def.Factor
	}
	if p.Max == 0 {
		p.Max = def.Max
	}
	if p.Jitter == 0 {
		p.Jitter = def.Jitter
	}
	return p
}

// Backoff returns the delay after the attempt-th failed attempt (1-based)
// under policy p, whose zero fields take [DefaultRetry]'s values:
// Initial × Factor^(attempt-1), capped at Max, then shortened by a random
// fraction of at most Jitter. A Jitter of [core.NoJitter] gives that delay
// exactly.
func Backoff(p core.RetryPolicy, attempt int) time.Duration {
	return backoff(p, attempt, rand.Float64)
}

func backoff(p core.RetryPolicy, attempt int, rnd func() float64) time.Duration {
	p = mergeRetry(p, DefaultRetry)
	if attempt < 1 {
		attempt = 1
	}
	d := float64(p.Initial) * math.Pow(p.Factor, float64(attempt-1))
	if math.IsInf(d, 0) || math.IsNaN(d) || d > float64(p.Max) {
		d = float64(p.Max)
	}
	if p.Jitter > 0 {
		d -= d * p.Jitter * rnd()
	}
	if d < 0 {
		d = 0
	}
	return time.Duration(d)
}
