//go:build race

package natsq_test

// exactJobs: under the race detector each FlowExact race runs over 500
// jobs instead of 2,000, as the pure-Go SQLite does: the race detector
// slows every claim several times. A run without -race takes the full
// size.
const exactJobs = 500

// variantExactJobs: under the race detector the compacting harness runs
// each FlowExact race over 200 jobs; the main harness runs the size
// above. The server and cluster harnesses run in a child built without
// the race detector, at full size, as every harness does without -race.
const variantExactJobs = 200
