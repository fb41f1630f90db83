package main

import (
	"regexp"
	"testing"

	"github.com/boson-go/boson/examples/internal/extest"
)

func TestMiddleware(t *testing.T) {
	out := extest.Run(t, run)
	for _, re := range []string{
		`timing: task=resize request=req-1 attempt=1 took=\S+ ok\n`,
		`timing: task=resize request=req-2 attempt=1 took=\S+ ok\n`,
		`timing: task=resize request=req-3 attempt=1 took=\S+ error: out of scratch space\n`,
		`timing: task=resize request=req-3 attempt=2 took=\S+ ok\n`,
		`summary: task=resize attempts=4 failed=1 mean=\S+\n`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("output does not match %s", re)
		}
	}
}
