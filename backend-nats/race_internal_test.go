//go:build race

package natsq

// modelSeeds: TestFlowModel drives one goroutine, where the race detector
// has nothing to find, so under it the model runs 3 seeds; a run without
// -race runs all 12.
const modelSeeds = 3
