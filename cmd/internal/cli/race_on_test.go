//go:build race

package cli

// raceEnabled: the race detector slows the pure-Go SQLite driver by an
// order of magnitude, so the smoke run shrinks.
const raceEnabled = true
