//go:build !race

package natsq

// modelSeeds: without the race detector, TestFlowModel runs 12 seeds.
const modelSeeds = 12
