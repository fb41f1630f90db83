package natsq_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	natsq "github.com/boson-go/boson/backend-nats"
	"github.com/boson-go/boson/core"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
)

// Two backends on one namespace are two replicas of one store: what one
// writes, the other sees after Sync, and a backend opened later replays it.
func TestReplicasAgree(t *testing.T) {
	url := embeddedURL(t)
	ctx := context.Background()
	clock := core.NewManualClock(time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC))
	ns := namespace("replicas")
	a := newBackend(t, connect(t, url), natsq.Options{Namespace: ns, DecisionClock: clock})
	b, err := natsq.New(ctx, connect(t, url), natsq.Options{Namespace: ns, DecisionClock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	res, err := a.Enqueue(ctx, []core.EnqueueRequest{{Task: "x", IdempotencyKey: "k"}, {Task: "y"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	jobs, err := b.Claim(ctx, core.ClaimRequest{Queue: "default", WorkerID: "b", Limit: 1, LeaseTTL: time.Minute})
	if err != nil || len(jobs) != 1 || jobs[0].ID != res[0].Job.ID {
		t.Fatalf("claim on b: %v %+v", err, jobs)
	}
	// a's claim is ordered after b's in the log: it gets the other job.
	jobs2, err := a.Claim(ctx, core.ClaimRequest{Queue: "default", WorkerID: "a", Limit: 5, LeaseTTL: time.Minute})
	if err != nil || len(jobs2) != 1 || jobs2[0].ID != res[1].Job.ID {
		t.Fatalf("claim on a: %v %+v", err, jobs2)
	}
	// Idempotency holds across replicas.
	again, err := b.Enqueue(ctx, []core.EnqueueRequest{{Task: "x", IdempotencyKey: "k"}})
	if err != nil || !again[0].Reused || again[0].Job.ID != res[0].Job.ID {
		t.Fatalf("reuse across replicas: %v %+v", err, again)
	}
	c, err := natsq.New(ctx, connect(t, url), natsq.Options{Namespace: ns, DecisionClock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, r := range []*natsq.Backend{a, b, c} {
		if err := r.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{res[0].Job.ID, res[1].Job.ID} {
		ja, _ := a.GetJob(ctx, id)
		jc, err := c.GetJob(ctx, id)
		if err != nil || fmt.Sprint(ja) != fmt.Sprint(jc) {
			t.Fatalf("replicas disagree on %s:\n%+v\n%+v (%v)", id, ja, jc, err)
		}
	}
}

// A batch larger than the server's message size is stored in parts and
// still applies as one command.
func TestLargeCommandsInParts(t *testing.T) {
	s := smallServer(t, 64<<10)
	ctx := context.Background()
	nc := connect(t, s.ClientURL())
	ns := namespace("parts")
	b := newBackend(t, nc, natsq.Options{Namespace: ns, Limits: core.Limits{MaxPayloadBytes: 8 << 10}})
	payload := bytes.Repeat([]byte("p"), 8<<10)
	reqs := make([]core.EnqueueRequest, 60)
	for i := range reqs {
		reqs[i] = core.EnqueueRequest{Task: "big", Payload: payload}
	}
	res, err := b.Enqueue(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	// A replica opened later assembles the parts from the stream.
	other, err := natsq.New(ctx, connect(t, s.ClientURL()), natsq.Options{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	got, err := other.GetJob(ctx, res[59].Job.ID)
	if err != nil || !bytes.Equal(got.Payload, payload) {
		t.Fatalf("replayed job: %v", err)
	}
	n, err := b.CountJobs(ctx, core.JobFilter{})
	if err != nil || n[core.StateQueued] != 60 {
		t.Fatalf("count: %v %v", n, err)
	}
	jobs, err := b.Claim(ctx, core.ClaimRequest{Queue: "default", WorkerID: "w", Limit: 60, LeaseTTL: time.Minute})
	if err != nil || len(jobs) != 60 || !bytes.Equal(jobs[59].Payload, payload) {
		t.Fatalf("claim: %v %d", err, len(jobs))
	}
}

// smallServer starts a server whose messages carry at most maxPayload
// bytes, and stops it when the test ends.
func smallServer(t *testing.T, maxPayload int32) *server.Server {
	t.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true,
		StoreDir: t.TempDir(), NoLog: true, NoSigs: true, MaxPayload: maxPayload})
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	t.Cleanup(s.Shutdown)
	return s
}

// A bulk step of core.MaxPageSize jobs on a server whose messages carry
// 32 kB is stored in parts (its 1,000 ids take about 29 kB, more than the
// 16 kB of command one message then carries) and still applies as one
// command, on this replica and on one that replays the log.
func TestBulkStepInParts(t *testing.T) {
	s := smallServer(t, 32<<10)
	ctx := context.Background()
	ns := namespace("bulkparts")
	b := newBackend(t, connect(t, s.ClientURL()), natsq.Options{Namespace: ns})
	reqs := make([]core.EnqueueRequest, core.MaxPageSize)
	for i := range reqs {
		reqs[i] = core.EnqueueRequest{Queue: "q", Task: "t"}
	}
	for i := 0; i < len(reqs); i += 100 {
		if _, err := b.Enqueue(ctx, reqs[i:i+100]); err != nil {
			t.Fatal(err)
		}
	}
	res, err := core.Bulk(ctx, b, core.BulkRequest{Action: core.BulkCancel, Limit: core.MaxPageSize,
		Search: core.JobSearch{JobFilter: core.JobFilter{Queue: "q"}}})
	if err != nil || res.Changed != core.MaxPageSize || !res.Done {
		t.Fatalf("bulk cancel = %+v, %v; want all %d jobs changed in one step", res, err, core.MaxPageSize)
	}
	js, err := jetstream.New(connect(t, s.ClientURL()))
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, natsq.StreamName(ns))
	if err != nil {
		t.Fatal(err)
	}
	part := "boson." + ns + ".part"
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(part))
	if err != nil || info.State.Subjects[part] == 0 {
		t.Fatalf("the log holds no part of the bulk step: %v %v", info, err)
	}
	other, err := natsq.New(ctx, connect(t, s.ClientURL()), natsq.Options{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	for _, r := range []*natsq.Backend{b, other} {
		n, err := r.CountJobs(ctx, core.JobFilter{Queue: "q"})
		if err != nil || n[core.StateCancelled] != core.MaxPageSize {
			t.Fatalf("counts after the bulk step: %v %v", n, err)
		}
	}
}
