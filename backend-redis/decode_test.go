package redisq

import (
	"errors"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// TestRecordLayout: a record the client packs, behind the values the
// enqueue script puts first, parses back; a record cut short or too long
// does not.
func TestRecordLayout(t *testing.T) {
	j := core.Job{Task: "mail", Priority: -5, MaxAttempts: 7, IdempotencyKey: "order-1",
		Cancel: core.CancellationPolicy{MaxDuration: 1500 * time.Millisecond}}
	head := appendNum(appendNum(appendNum(nil, 1_900_000_000_000_001), 1_900_000_000_000_000), 1_900_000_001_000_000)
	rec := string(append(head, 1)) + packRecord(j)
	v, err := parseRecord("id", rec)
	if err != nil {
		t.Fatal(err)
	}
	want := record{runAt: 1_900_000_000_000_001, created: 1_900_000_000_000_000, deadline: 1_900_000_001_000_000,
		state: core.StateQueued, priority: -5, maxAttempts: 7, maxDuration: 1_500_000, task: "mail", idemKey: "order-1"}
	if v != want {
		t.Fatalf("parsed %+v, want %+v", v, want)
	}
	for _, bad := range []string{rec[:len(rec)-1], rec + "x", "", string(append(head, 1)) + "\x09" + packRecord(j)[1:]} {
		if _, err := parseRecord("id", bad); !errors.Is(err, errRecord) {
			t.Errorf("record of %d bytes: %v, want errRecord", len(bad), err)
		}
	}
}
