package core_test

import (
	"encoding/json"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// TestNoJitter: zero jitter can be asked for with core.NoJitter, which is
// valid, survives JSON, and is told apart from the zero Jitter (the
// default) by the request fingerprint; other negative values stay invalid.
func TestNoJitter(t *testing.T) {
	if err := core.ValidateRetryPolicy(core.RetryPolicy{Initial: time.Second, Jitter: core.NoJitter}); err != nil {
		t.Fatalf("NoJitter refused: %v", err)
	}
	for _, j := range []float64{-0.5, -2, math.NaN(), math.Inf(-1), 1.5} {
		if err := core.ValidateRetryPolicy(core.RetryPolicy{Jitter: j}); !errors.Is(err, core.ErrInvalidArgument) {
			t.Errorf("jitter %v: %v, want core.ErrInvalidArgument", j, err)
		}
	}
	if _, err := core.PrepareJobs([]core.EnqueueRequest{{Task: "t", Retry: core.RetryPolicy{Jitter: core.NoJitter}}}, time.Now(), core.DefaultLimits); err != nil {
		t.Fatalf("enqueue with NoJitter: %v", err)
	}

	b, err := json.Marshal(core.RetryPolicy{Initial: time.Second, Jitter: core.NoJitter})
	if err != nil {
		t.Fatal(err)
	}
	var back core.RetryPolicy
	if err := json.Unmarshal(b, &back); err != nil || back.Jitter != core.NoJitter {
		t.Fatalf("NoJitter through JSON %s: %+v %v", b, back, err)
	}
	// Stored jobs and clients from before NoJitter: no jitter field is
	// the default, as it always was.
	var old core.RetryPolicy
	if err := json.Unmarshal([]byte(`{"initial":1000000000}`), &old); err != nil || old.Jitter != 0 {
		t.Fatalf("policy without jitter: %+v %v", old, err)
	}
	if b, _ := json.Marshal(core.RetryPolicy{Initial: time.Second}); string(b) != `{"initial":1000000000}` {
		t.Fatalf("default jitter is written: %s", b)
	}

	def := core.EnqueueRequest{Task: "t", Retry: core.RetryPolicy{Initial: time.Second}}
	none := def
	none.Retry.Jitter = core.NoJitter
	if core.Fingerprint(def) == core.Fingerprint(none) {
		t.Fatal("the default jitter and NoJitter have one fingerprint")
	}
}
