//go:build !race

package postgres_test

// exactJobs: without the race detector, the full FlowExact size.
const exactJobs = 0
