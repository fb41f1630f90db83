//go:build race

package postgres_test

// exactJobs: under the race detector each FlowExact race runs over 500
// jobs instead of 2,000, as on the other stores: the race detector slows
// every claim several times. A run without -race takes the full size.
const exactJobs = 500
