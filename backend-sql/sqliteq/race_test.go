//go:build race

package sqliteq_test

const raceEnabled = true

// exactJobs: under the race detector, the pure-Go SQLite runs each
// FlowExact race over 200 jobs: its single writer serialises the eight
// claimers, and at 500 jobs the six races took 45 to 150 s each, most of
// the package's time. TestFlowExactFullSize runs them at the full 2,000
// in a child built without the race detector, as a run without -race does.
const exactJobs = 200
