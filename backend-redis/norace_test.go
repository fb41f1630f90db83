//go:build !race

package redisq

// exactJobs: without the race detector, the full FlowExact size.
const exactJobs = 0
