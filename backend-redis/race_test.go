//go:build race

package redisq

// exactJobs: under the race detector each FlowExact race runs over 500
// jobs instead of 2,000, as the pure-Go SQLite does: the race detector
// slows every claim several times, and four harnesses run the races, so
// the full size would take most of the package's time. A run without
// -race takes the full size.
const exactJobs = 500

// variantExactJobs: under the race detector the harnesses that vary one
// part of the store (its server, layout or connection path) run each
// FlowExact race over 200 jobs; the main harness runs the size above,
// and a run without -race runs the full size on every harness.
const variantExactJobs = 200
