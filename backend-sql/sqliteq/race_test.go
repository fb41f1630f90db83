//go:build race

package sqliteq_test

const raceEnabled = true

// exactJobs: under the race detector, the pure-Go SQLite runs each
// FlowExact race over 500 jobs (the full 2,000 take minutes a case); a
// run without -race takes the full size.
const exactJobs = 500
