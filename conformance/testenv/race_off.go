//go:build !race

package testenv

// raceEnabled reports whether this binary was built with the race detector.
const raceEnabled = false
