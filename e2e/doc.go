// Package e2e holds boson's end-to-end scenario matrix: a table of named
// scenarios, each run through the runtime (package boson) on every backend
// listed in backends_test.go. Adding a backend is one entry there: a factory
// that returns a fresh, isolated backend driven by the given clock, and the
// optional capabilities it offers.
//
// Run it with: go test -race ./... (from this folder).
package e2e
