package core

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestValidateFlowRequest(t *testing.T) {
	ok := EnqueueRequest{Task: "t"}
	bad := map[string]EnqueueRequest{
		"limit key over the name rules":    {Task: "t", LimitKey: "a.b"},
		"sequence key over the name rules": {Task: "t", SequenceKey: strings.Repeat("x", MaxNameLength+1)},
		"unknown unique mode":              {Task: "t", IdempotencyKey: "k", Unique: "forever"},
		"mode without a key":               {Task: "t", Unique: UniqueWhileActive},
		"by period without a period":       {Task: "t", IdempotencyKey: "k", Unique: UniqueByPeriod},
		"by period under a second":         {Task: "t", IdempotencyKey: "k", Unique: UniqueByPeriod, UniquePeriod: time.Millisecond},
		"by period over the bound":         {Task: "t", IdempotencyKey: "k", Unique: UniqueByPeriod, UniquePeriod: MaxUniquePeriod + 1},
		"period in another mode":           {Task: "t", IdempotencyKey: "k", UniquePeriod: time.Minute},
	}
	if err := ValidateRequest(ok, Limits{}); err != nil {
		t.Fatal(err)
	}
	good := EnqueueRequest{Task: "t", IdempotencyKey: "k", Unique: UniqueByPeriod, UniquePeriod: time.Hour, LimitKey: "tenant-1", SequenceKey: "order-7"}
	if err := ValidateRequest(good, Limits{}); err != nil {
		t.Fatal(err)
	}
	for name, r := range bad {
		if err := ValidateRequest(r, Limits{}); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: got %v, want ErrInvalidArgument", name, err)
		}
	}
}

func TestValidateFlowConfig(t *testing.T) {
	for name, c := range map[string]TaskConfig{
		"negative max running":       {Task: "t", MaxRunning: -1},
		"absurd max running per key": {Task: "t", MaxRunningPerKey: MaxFlowLimit + 1},
		"negative start rate":        {Task: "t", MaxStartsPerSecond: -5},
		"absurd start rate per key":  {Task: "t", MaxStartsPerSecondPerKey: 1 << 40},
	} {
		if err := ValidateTaskConfig(c); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: got %v, want ErrInvalidArgument", name, err)
		}
	}
	if err := ValidateTaskConfig(TaskConfig{Task: "t", MaxRunning: 3, MaxRunningPerKey: 2, MaxStartsPerSecond: 10, MaxStartsPerSecondPerKey: MaxFlowLimit}); err != nil {
		t.Fatal(err)
	}
	if err := ValidateQueueConfig(QueueConfig{Queue: "q", MaxRunning: -1}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("negative queue limit: %v", err)
	}
	if err := ValidateJobSearch(JobSearch{LimitKey: "a b"}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("search by a bad limit key: %v", err)
	}
}

func TestPeriodEndAndHoldsKey(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 17, 3, 0, time.UTC)
	if got, want := PeriodEnd(at, time.Hour), time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Fatalf("PeriodEnd = %v, want %v", got, want)
	}
	if got := PeriodEnd(at.Truncate(time.Hour), time.Hour); !got.Equal(at.Truncate(time.Hour).Add(time.Hour)) {
		t.Fatalf("a window's start belongs to it: %v", got)
	}
	j := Job{IdempotencyKey: "k", State: StateRunning, CreatedAt: at}
	if !HoldsKey(j, at.Add(1000*time.Hour)) {
		t.Fatal("until retention: held")
	}
	j.Unique = UniqueWhileActive
	if !HoldsKey(j, at) {
		t.Fatal("while active, running: held")
	}
	j.State = StateSucceeded
	if HoldsKey(j, at) {
		t.Fatal("while active, succeeded: free")
	}
	j.Unique, j.UniquePeriod = UniqueByPeriod, time.Hour
	if !HoldsKey(j, at.Add(42*time.Minute)) || HoldsKey(j, at.Add(43*time.Minute)) {
		t.Fatal("by period: held until 11:00, free from then")
	}
	if HoldsKey(Job{}, at) {
		t.Fatal("no key, nothing held")
	}
}

func TestFingerprintOfFlowFields(t *testing.T) {
	base := EnqueueRequest{Task: "t", Payload: []byte("x")}
	keyed := base
	keyed.LimitKey = "tenant"
	seq := base
	seq.SequenceKey = "tenant"
	if Fingerprint(base) == Fingerprint(keyed) || Fingerprint(keyed) == Fingerprint(seq) {
		t.Fatal("flow fields must take part in the fingerprint")
	}
}
