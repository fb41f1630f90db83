package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

// Flow control across worker processes: three processes share a per-key
// limit, and a sequence survives the SIGKILL of the process that ran it.
// The workers are this test binary started again as TestFlowWorkerChild;
// they append what their handlers do to one record file (each record one
// O_APPEND write, so the file orders them). A handler's record of its
// start follows its claim and its record of its end precedes its
// completion, so the records never show more at once than the store ran.

const (
	envFlowRole    = "BOSON_E2E_FLOW_ROLE" // "limit" or "sequence"
	envFlowBackend = "BOSON_E2E_FLOW_BACKEND"
	envFlowLocator = "BOSON_E2E_FLOW_LOCATOR"
	envFlowRecords = "BOSON_E2E_FLOW_RECORDS"
	envFlowID      = "BOSON_E2E_FLOW_ID"
)

const (
	flowLimitQueue = "flow-limit"
	flowSeqQueue   = "flow-seq"
	flowKeyLimit   = 2
)

// flowLimits are the limits every limit worker declares.
var flowLimits = boson.FlowLimits{MaxRunningPerKey: flowKeyLimit}

// procRecord is one line of the record file.
type procRecord struct {
	Start  bool   `json:"start"`
	Key    string `json:"key"`
	N      int    `json:"n"`
	Worker string `json:"worker"`
}

// recordFile appends records to path, one write each.
type recordFile struct {
	mu sync.Mutex
	f  *os.File
}

func openRecords(t testing.TB, path string) *recordFile {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return &recordFile{f: f}
}

func (r *recordFile) add(start bool, j flowJob, worker string) {
	b, _ := json.Marshal(procRecord{Start: start, Key: j.Key, N: j.N, Worker: worker})
	r.mu.Lock()
	defer r.mu.Unlock()
	_, _ = r.f.Write(append(b, '\n'))
}

func readRecords(t testing.TB, path string) []procRecord {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []procRecord
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		var r procRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("record %q: %v", sc.Text(), err)
		}
		out = append(out, r)
	}
	return out
}

func asFlowRecords(rs []procRecord) []flowRecord {
	out := make([]flowRecord, len(rs))
	for i, r := range rs {
		out[i] = flowRecord{Start: r.Start, Key: r.Key, N: r.N}
	}
	return out
}

// flowHandler is the handler of both roles: it records its start, works
// for d (in the sequence role, job 2 of key "k1" blocks until the process
// dies or its context ends), and records its end.
func flowHandler(rec *recordFile, worker string, d time.Duration, blockK1N2 bool) func(context.Context, flowJob) (struct{}, error) {
	return func(ctx context.Context, j flowJob) (struct{}, error) {
		rec.add(true, j, worker)
		if blockK1N2 && j.Key == "k1" && j.N == 2 {
			<-ctx.Done()
			return struct{}{}, ctx.Err()
		}
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return struct{}{}, ctx.Err()
		}
		rec.add(false, j, worker)
		return struct{}{}, nil
	}
}

// startFlowChild starts a worker process of role on the store at locator.
func startFlowChild(t *testing.T, f backendFactory, role, locator, records, id string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFlowWorkerChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), envFlowRole+"="+role, envFlowBackend+"="+f.Name, envFlowLocator+"="+locator,
		envFlowRecords+"="+records, envFlowID+"="+id)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		if t.Failed() {
			t.Logf("worker %s output:\n%s", id, out.String())
		}
	})
	return cmd
}

// TestFlowLimitAcrossProcesses: three worker processes (three workers in
// one process on mem, which no other process can open) drain jobs of three
// tenants under a per-tenant limit of 2, with four slots each. The store's
// running counts, sampled throughout, and the workers' records never
// exceed the limit, and every job runs to success.
func TestFlowLimitAcrossProcesses(t *testing.T) {
	if os.Getenv(envFlowRole) != "" {
		return // a child of another run
	}
	for _, f := range flowBackends() {
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			records := t.TempDir() + "/records"
			var (
				b       core.QueueBackend
				locator string
			)
			if f.Durable {
				locator = f.Locator(t)
				b = f.Open(t, nil, locator, true)
			} else {
				b = f.New(t, nil)
			}
			fc := requireFlow(t, f.Name, b)
			client, err := boson.NewClient(b, boson.ClientOptions{Logger: quiet, PollInterval: 20 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			if err := client.SetFlowLimits(ctx, flowTask.Name(), flowLimits); err != nil {
				t.Fatal(err)
			}
			tenants := []string{"acme", "beta", "gamma"}
			const perTenant = 8
			var reqs []boson.Request
			for n := range perTenant {
				for _, k := range tenants {
					reqs = append(reqs, flowTask.Request(flowJob{Key: k, N: n}, boson.WithQueue(flowLimitQueue), boson.WithLimitKey(k)))
				}
			}
			spawned, err := client.SpawnRequests(ctx, reqs...)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				id := fmt.Sprintf("flow-limit-%d", i)
				if f.Durable {
					startFlowChild(t, f, "limit", locator, records, id)
					continue
				}
				w := newFlowLimitWorker(t, b, id, openRecords(t, records))
				if err := w.Start(ctx); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = w.Shutdown(context.Background()) })
			}

			total := int64(len(reqs))
			peakStore := map[string]int64{}
			js, _ := b.(core.JobSearcher)
			for {
				counts, err := fc.RunningByKey(ctx, flowTask.Name(), 0)
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range counts {
					peakStore[c.Key] = max(peakStore[c.Key], c.Running)
					if c.Running > flowKeyLimit {
						t.Fatalf("RunningByKey: tenant %s has %d running, limit %d", c.Key, c.Running, flowKeyLimit)
					}
				}
				if js != nil {
					for _, k := range tenants {
						n, err := js.CountSearch(ctx, core.JobSearch{JobFilter: core.JobFilter{Queue: flowLimitQueue, States: []core.JobState{core.StateRunning}}, LimitKey: k})
						if err != nil {
							t.Fatal(err)
						}
						if n[core.StateRunning] > flowKeyLimit {
							t.Fatalf("CountSearch: tenant %s has %d running, limit %d", k, n[core.StateRunning], flowKeyLimit)
						}
					}
				}
				n, err := b.CountJobs(ctx, core.JobFilter{Queue: flowLimitQueue})
				if err != nil {
					t.Fatal(err)
				}
				if n[core.StateSucceeded] == total {
					break
				}
				if n[core.StateFailed]+n[core.StateCancelled] > 0 {
					t.Fatalf("jobs ended badly: %v", n)
				}
				if ctx.Err() != nil {
					t.Fatalf("jobs not drained: %v (records %d)", n, len(readRecords(t, records)))
				}
				time.Sleep(5 * time.Millisecond)
			}
			recs := readRecords(t, records)
			starts, workers := map[string]int{}, map[string]bool{}
			for _, r := range recs {
				if r.Start {
					starts[fmt.Sprintf("%s/%d", r.Key, r.N)]++
					workers[r.Worker] = true
				}
			}
			if len(starts) != int(total) {
				t.Fatalf("%d distinct jobs started, want %d", len(starts), total)
			}
			peak := maxConcurrent(asFlowRecords(recs))
			for k, p := range peak {
				if p > flowKeyLimit {
					t.Fatalf("records: tenant %s ran %d at once across the workers, limit %d", k, p, flowKeyLimit)
				}
			}
			for _, s := range spawned {
				j, err := b.GetJob(ctx, s.Job.ID)
				if err != nil {
					t.Fatal(err)
				}
				var in flowJob
				_ = json.Unmarshal(j.Payload, &in)
				if j.LimitKey != in.Key {
					t.Fatalf("job %s stored limit key %q, want %q", j.ID, j.LimitKey, in.Key)
				}
			}
			if after, err := fc.RunningByKey(ctx, flowTask.Name(), 0); err != nil || len(after) != 0 {
				t.Fatalf("RunningByKey after the drain: %v %v", after, err)
			}
			t.Logf("%s: peak running per tenant: store %v, records %v; %d workers ran jobs", f.Name, peakStore, peak, len(workers))
		})
	}
}

func newFlowLimitWorker(t testing.TB, b core.QueueBackend, id string, rec *recordFile) *boson.Worker {
	w, err := boson.NewWorker(b, boson.WorkerOptions{ID: id, Queues: []string{flowLimitQueue}, Concurrency: 4, Logger: quiet,
		PollInterval: 10 * time.Millisecond, RescueInterval: -1, RetentionInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := boson.Register(w, flowTask, flowHandler(rec, id, 40*time.Millisecond, false), boson.WithFlowLimits(flowLimits)); err != nil {
		t.Fatal(err)
	}
	return w
}

// TestFlowSequenceSurvivesKill: a worker process runs two sequences; job 2
// of sequence k1 blocks and the process is killed with SIGKILL. Sequence
// k2 finishes meanwhile (sequences do not wait on each other), job 3 of k1
// never starts while job 2 holds the sequence, and once the dead worker's
// lease is rescued a worker in another process runs job 2 again and then
// the rest, in order.
func TestFlowSequenceSurvivesKill(t *testing.T) {
	if os.Getenv(envFlowRole) != "" {
		return
	}
	for _, f := range flowBackends() {
		if !f.Durable {
			continue // no other process can open mem; flow_sequence_order covers it
		}
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			clock := core.NewManualClock(time.Now())
			locator := f.Locator(t)
			b := f.Open(t, clock, locator, true)
			requireFlow(t, f.Name, b)
			client, err := boson.NewClient(b, boson.ClientOptions{Clock: clock, Logger: quiet, PollInterval: 20 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			const perKey = 5
			ids := map[string][]string{}
			for n := range perKey {
				for _, k := range []string{"k1", "k2"} {
					h, err := boson.Spawn(ctx, client, flowTask, flowJob{Key: k, N: n}, boson.WithQueue(flowSeqQueue), boson.WithSequenceKey(k))
					if err != nil {
						t.Fatal(err)
					}
					ids[k] = append(ids[k], h.ID())
				}
			}
			records := t.TempDir() + "/records"
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("records per key: %q", sequenceTrace(asFlowRecords(readRecords(t, records))))
				}
			})
			child := startFlowChild(t, f, "sequence", locator, records, "flow-seq-child")
			// The kill comes once the store has every completion the
			// records show (a completion in flight would be rescued and
			// run again, which is a lost lease, not this scenario's point).
			waitUntil(t, "k1 job 2 to start and k2 to finish in the child", func() bool {
				tr := sequenceTrace(asFlowRecords(readRecords(t, records)))
				if tr["k2"] != wantTrace(perKey) || tr["k1"] != wantTrace(2)+" s2" {
					return false
				}
				done := append(append([]string(nil), ids["k2"]...), ids["k1"][:2]...)
				for _, id := range done {
					if j, err := b.GetJob(ctx, id); err != nil || j.State != core.StateSucceeded {
						return false
					}
				}
				return true
			})
			if err := child.Process.Kill(); err != nil { // SIGKILL
				t.Fatal(err)
			}
			_ = child.Wait()
			waitUntil(t, "the child's claim to be visible", func() bool {
				j, _ := b.GetJob(ctx, ids["k1"][2])
				return j.State == core.StateRunning && j.Lease.WorkerID == "flow-seq-child"
			})
			// Job 3 of k1 stays queued behind the running job 2.
			if j, _ := b.GetJob(ctx, ids["k1"][3]); j.State != core.StateQueued {
				t.Fatalf("k1 job 3 is %s while job 2 holds the sequence", j.State)
			}

			// Past the dead worker's lease: rescue, then a worker in this
			// process finishes the sequence.
			clock.Set(time.Now().Add(2 * time.Hour))
			rec := openRecords(t, records)
			w, err := boson.NewWorker(b, boson.WorkerOptions{ID: "flow-seq-survivor", Queues: []string{flowSeqQueue}, Concurrency: 4, Clock: clock, Logger: quiet,
				PollInterval: 10 * time.Millisecond, RescueInterval: -1, RetentionInterval: -1})
			if err != nil {
				t.Fatal(err)
			}
			if err := boson.Register(w, flowTask, flowHandler(rec, "flow-seq-survivor", 5*time.Millisecond, false)); err != nil {
				t.Fatal(err)
			}
			if r, err := w.Rescue(ctx); err != nil || r.Requeued != 1 {
				t.Fatalf("rescue %+v %v", r, err)
			}
			if err := w.Start(ctx); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = w.Shutdown(context.Background()) }()
			for _, id := range ids["k1"] {
				waitUntil(t, "k1 to finish", func() bool {
					j, _ := b.GetJob(ctx, id)
					return j.State == core.StateSucceeded
				})
			}
			tr := sequenceTrace(asFlowRecords(readRecords(t, records)))
			want := wantTrace(2) + " s2 " + wantTrace(perKey)[len(wantTrace(2))+1:]
			if tr["k1"] != want {
				t.Fatalf("k1 ran %q, want %q", tr["k1"], want)
			}
			if tr["k2"] != wantTrace(perKey) {
				t.Fatalf("k2 ran %q, want %q", tr["k2"], wantTrace(perKey))
			}
			runs, err := b.ListRuns(ctx, ids["k1"][2])
			if err != nil {
				t.Fatal(err)
			}
			if len(runs) != 2 || runs[0].Status != core.RunLost || runs[1].Status != core.RunSucceeded || runs[1].WorkerID != "flow-seq-survivor" {
				t.Fatalf("runs of k1 job 2: %+v", runs)
			}
		})
	}
}

// TestFlowWorkerChild is the worker process of the flow tests; it does
// nothing unless started by one.
func TestFlowWorkerChild(t *testing.T) {
	role := os.Getenv(envFlowRole)
	if role == "" {
		return
	}
	name := os.Getenv(envFlowBackend)
	var f backendFactory
	for _, c := range flowBackends() {
		if c.Name == name {
			f = c
		}
	}
	if f.Open == nil {
		t.Fatalf("unknown backend %q", name)
	}
	b := f.Open(t, nil, os.Getenv(envFlowLocator), false)
	id := os.Getenv(envFlowID)
	rec := openRecords(t, os.Getenv(envFlowRecords))
	var w *boson.Worker
	switch role {
	case "limit":
		w = newFlowLimitWorker(t, b, id, rec)
	case "sequence":
		var err error
		w, err = boson.NewWorker(b, boson.WorkerOptions{ID: id, Queues: []string{flowSeqQueue}, Concurrency: 4, Logger: quiet,
			PollInterval: 10 * time.Millisecond, LeaseTTL: time.Hour, RescueInterval: -1, RetentionInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		if err := boson.Register(w, flowTask, flowHandler(rec, id, 5*time.Millisecond, true)); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("unknown role %q", role)
	}
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Minute) // the parent kills this process long before
	t.Fatal("the parent did not stop this worker " + strconv.Quote(id))
}
