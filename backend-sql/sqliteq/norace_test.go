//go:build !race

package sqliteq_test

const raceEnabled = false
