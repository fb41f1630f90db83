package cli

import (
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

func TestBulkBar(t *testing.T) {
	for _, c := range []struct {
		out     bulkOut
		total   int64
		width   int
		elapsed time.Duration
		want    string
	}{
		{bulkOut{}, 200, 10, 0,
			"bulk cancel [          ]   0% 0/200, 0 changed, 0 skipped, 0 failed, 0 jobs/s"},
		{bulkOut{Matched: 50, Changed: 40, Skipped: 7, Failed: 3}, 200, 10, 2 * time.Second,
			"bulk cancel [==        ]  25% 50/200, 40 changed, 7 skipped, 3 failed, 25 jobs/s"},
		{bulkOut{Matched: 199, Changed: 199}, 200, 4, 100 * time.Millisecond,
			"bulk cancel [=== ]  99% 199/200, 199 changed, 0 skipped, 0 failed, 1.99k jobs/s"},
		{bulkOut{Matched: 250, Changed: 250}, 200, 4, time.Second, // the estimate was low
			"bulk cancel [====] 100% 250/200, 250 changed, 0 skipped, 0 failed, 250 jobs/s"},
		{bulkOut{}, 0, 4, time.Second, // nothing matched
			"bulk cancel [====] 100% 0/0, 0 changed, 0 skipped, 0 failed, 0 jobs/s"},
		{bulkOut{Matched: 1, Changed: 1}, 2, 0, -time.Second,
			"bulk cancel []  50% 1/2, 1 changed, 0 skipped, 0 failed, 0 jobs/s"},
	} {
		if got := bulkBar(core.BulkCancel, c.out, c.total, c.width, c.elapsed); got != c.want {
			t.Errorf("bulkBar(%+v, %d, %d, %s):\n got %q\nwant %q", c.out, c.total, c.width, c.elapsed, got, c.want)
		}
	}
}
