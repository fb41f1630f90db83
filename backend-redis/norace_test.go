//go:build !race

package redisq

// exactJobs: without the race detector, the full FlowExact size.
const exactJobs = 0

// variantExactJobs: without the race detector, the full FlowExact size
// on every harness.
const variantExactJobs = 0
