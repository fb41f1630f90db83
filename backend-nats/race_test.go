//go:build race

package natsq_test

// exactJobs: under the race detector each FlowExact race runs over 500
// jobs instead of 2,000, as the pure-Go SQLite does: the race detector
// slows every claim several times, and four harnesses run the races, so
// the full size would take most of the package's time. A run without
// -race takes the full size.
const exactJobs = 500
