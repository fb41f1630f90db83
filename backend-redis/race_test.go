//go:build race

package redisq

// exactJobs: under the race detector each FlowExact race runs over 500
// jobs instead of 2,000, as the pure-Go SQLite does: the race detector
// slows every claim several times. A run without -race takes the full
// size, as do the harnesses that vary one part of the store, which run in
// a child built without the race detector.
const exactJobs = 500
