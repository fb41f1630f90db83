package faults_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	boson "github.com/boson-go/boson/runtime"
)

// The worker process: the test binary started again with these variables
// set runs TestFaultWorkerProcess, which serves the scenario's queue until
// SIGTERM (or until it is killed).
const (
	envStore   = "BOSON_FAULTS_STORE"
	envURL     = "BOSON_FAULTS_URL"
	envLocator = "BOSON_FAULTS_LOCATOR"
	envQueue   = "BOSON_FAULTS_QUEUE"
	envRecord  = "BOSON_FAULTS_RECORD"
	envWorker  = "BOSON_FAULTS_WORKER"
	envLease   = "BOSON_FAULTS_LEASE"
)

// In is a fault job's input: Steps durable steps (0 to 3), WorkMs of work
// in each, and a planned permanent failure when Fail is set.
type In struct {
	N      int  `json:"n"`
	Steps  int  `json:"steps"`
	WorkMs int  `json:"work_ms"`
	Fail   bool `json:"fail,omitempty"`
}

// Out is a fault job's result: who produced it, under which fencing
// token, and the step values it saw.
type Out struct {
	Token int64    `json:"token"`
	Pid   int      `json:"pid"`
	Steps []string `json:"steps"`
}

var (
	faultTask  = boson.NewTask[In, Out]("fault-job")
	faultSteps = []boson.Step[string]{boson.NewStep[string]("s0"), boson.NewStep[string]("s1"), boson.NewStep[string]("s2")}
)

// errPlanned is the failure of jobs spawned with Fail set.
var errPlanned = errors.New("planned failure")

// faultHandler is the task the worker processes run. It records an
// evStart event when an attempt starts, an evStep event for each step
// value it reads back and an evFinish event when it returns its result.
func faultHandler(rec *recorder) func(context.Context, In) (Out, error) {
	pid := os.Getpid()
	return func(ctx context.Context, in In) (Out, error) {
		info, _ := boson.Info(ctx)
		rec.add(event{Kind: evStart, Job: info.JobID, Token: info.Token})
		out := Out{Token: info.Token, Pid: pid}
		for i := 0; i < in.Steps && i < len(faultSteps); i++ {
			v, err := faultSteps[i].Run(ctx, func(ctx context.Context) (string, error) {
				if err := work(ctx, in.WorkMs); err != nil {
					return "", err
				}
				return fmt.Sprintf("%d/%d/%d", pid, info.Token, info.Attempt), nil
			})
			if err != nil {
				return Out{}, err
			}
			rec.add(event{Kind: evStep, Job: info.JobID, Token: info.Token, Step: "s" + strconv.Itoa(i), Value: v})
			out.Steps = append(out.Steps, v)
		}
		if err := work(ctx, in.WorkMs); err != nil {
			return Out{}, err
		}
		if in.Fail {
			return Out{}, boson.Permanent(errPlanned)
		}
		rec.add(event{Kind: evFinish, Job: info.JobID, Token: info.Token})
		return out, nil
	}
}

func work(ctx context.Context, ms int) error {
	if ms <= 0 {
		return nil
	}
	t := time.NewTimer(time.Duration(rand.IntN(ms)+1) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestFaultWorkerProcess is the worker process of the fault scenarios; it
// does nothing, and passes, unless a scenario started it.
func TestFaultWorkerProcess(t *testing.T) {
	name := os.Getenv(envStore)
	if name == "" {
		return
	}
	s, ok := storeNamed(name, os.Getenv(envURL))
	if !ok {
		t.Fatalf("unknown store %q", name)
	}
	lease, err := time.ParseDuration(os.Getenv(envLease))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(os.Getenv(envRecord), strconv.Itoa(os.Getpid())+".jsonl"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rec := &recorder{f: f}
	b := recording(s.Open(t, os.Getenv(envURL), os.Getenv(envLocator), false), rec)
	w, err := boson.NewWorker(b, boson.WorkerOptions{
		ID: os.Getenv(envWorker), Queues: []string{os.Getenv(envQueue)}, Concurrency: 8, Logger: quiet,
		LeaseTTL: lease, HeartbeatInterval: lease / 5, PollInterval: 20 * time.Millisecond,
		RescueInterval: lease / 2, RetentionInterval: -1, ShutdownGrace: 2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := boson.Register(w, faultTask, faultHandler(rec)); err != nil {
		t.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := w.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		t.Logf("worker: %v", err)
	}
}
