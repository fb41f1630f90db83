//go:build !race

package sqliteq_test

const raceEnabled = false

// exactJobs: without the race detector, the full FlowExact size.
const exactJobs = 0
