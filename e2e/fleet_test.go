package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	natsq "github.com/boson-go/boson/backend-nats"
	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
	"github.com/nats-io/nats.go"
)

// The fleet benchmark's child protocol: the parent names the server, the
// namespace, the job count and the files through which child and parent
// meet.
const (
	envFleetURL  = "BOSON_E2E_FLEET_URL"
	envFleetNS   = "BOSON_E2E_FLEET_NS"
	envFleetJobs = "BOSON_E2E_FLEET_JOBS"
	envFleetDir  = "BOSON_E2E_FLEET_DIR"
	envFleetID   = "BOSON_E2E_FLEET_ID"
)

// fleetJobs is how many jobs each fleet size drains; BOSON_FLEET_JOBS
// overrides it.
func fleetJobs() int {
	if n, err := strconv.Atoi(os.Getenv("BOSON_FLEET_JOBS")); err == nil && n > 0 {
		return n
	}
	return 20_000
}

// fleetResult is what a worker process reports when the namespace is done.
type fleetResult struct {
	CPU time.Duration `json:"cpu"`
	Ran int64         `json:"ran"`
}

// BenchmarkFleetNATS runs 1, 2, 4 and 8 worker processes (this test binary
// started again as TestFleetWorkerChild) on one NATS namespace of a private
// nats-server process and drains the same number of no-op jobs with each
// fleet. Every worker opens the namespace before the jobs are enqueued; the
// jobs are enqueued in batches of 1,000; then the workers start claiming.
// It reports the drain rate (jobs/s, from the start of claiming until the
// workers' handlers ran every job), the CPU per job of all worker
// processes (from before the enqueue to their exit; they are told to stop
// once the drain ended) and of the server (from the enqueue to the end of
// the drain), and their sum. It checks that every job ran exactly once.
//
// The server binary is $BOSON_FLEET_NATS_SERVER, else nats-server on PATH,
// else /usr/sbin/nats-server. Run it alone (it measures CPU):
//
//	flock /tmp/boson-bench.lock go test -run '^$' -bench FleetNATS -benchtime 1x ./e2e
func BenchmarkFleetNATS(b *testing.B) {
	bin := natsServerBinary(b)
	for _, n := range []int{1, 2, 4, 8} {
		b.Run(fmt.Sprintf("workers=%d", n), func(b *testing.B) {
			for range b.N {
				runFleet(b, bin, n, fleetJobs())
			}
		})
	}
}

func runFleet(b *testing.B, bin string, workers, jobs int) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dir := b.TempDir()
	srv, url, nc := startNATSProcess(b, bin, dir)
	ns := uniqueName("fleet")
	prod, err := natsq.New(ctx, nc, natsq.Options{Namespace: ns, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer prod.Close()

	children := make([]*exec.Cmd, workers)
	for i := range children {
		c := exec.Command(os.Args[0], "-test.run=^TestFleetWorkerChild$", "-test.count=1")
		c.Env = append(os.Environ(), envFleetURL+"="+url, envFleetNS+"="+ns, envFleetJobs+"="+strconv.Itoa(jobs),
			envFleetDir+"="+dir, envFleetID+"="+strconv.Itoa(i))
		c.Stderr = os.Stderr
		if err := c.Start(); err != nil {
			b.Fatal(err)
		}
		children[i] = c
	}
	defer func() {
		for _, c := range children {
			if c.ProcessState == nil {
				_ = c.Process.Kill()
				_ = c.Wait()
			}
		}
	}()
	for i := range children {
		waitFile(b, filepath.Join(dir, fmt.Sprintf("ready-%d", i)))
	}

	b.ResetTimer()
	srvStart := procCPU(b, srv.Process.Pid)
	for sent := 0; sent < jobs; {
		k := min(1000, jobs-sent)
		reqs := make([]core.EnqueueRequest, k)
		for i := range reqs {
			reqs[i] = core.EnqueueRequest{Queue: "fleet", Task: fleetTask.Name(), Payload: []byte(`0`)}
		}
		if _, err := prod.Enqueue(ctx, reqs); err != nil {
			b.Fatal(err)
		}
		sent += k
	}
	start := time.Now()
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o600); err != nil {
		b.Fatal(err)
	}
	// The drain ends when the workers' handlers ran every job (each worker
	// reports its count in a file, so that watching costs the store
	// nothing); then the workers are told to stop.
	for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(10 * time.Millisecond) {
		var n int64
		for i := range children {
			if data, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("ran-%d", i))); err == nil {
				v, _ := strconv.ParseInt(string(data), 10, 64)
				n += v
			}
		}
		if n >= int64(jobs) {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d jobs ran after 5 minutes", n, jobs)
		}
	}
	drain := time.Since(start)
	srvCPU := procCPU(b, srv.Process.Pid) - srvStart
	if err := os.WriteFile(filepath.Join(dir, "stop"), nil, 0o600); err != nil {
		b.Fatal(err)
	}
	for i, c := range children {
		if err := c.Wait(); err != nil {
			b.Fatalf("worker %d: %v", i, err)
		}
	}
	b.StopTimer()
	var workCPU time.Duration
	var ran int64
	for i := range children {
		var r fleetResult
		data, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("result-%d", i)))
		if err != nil {
			b.Fatal(err)
		}
		if err := json.Unmarshal(data, &r); err != nil {
			b.Fatal(err)
		}
		workCPU += r.CPU
		ran += r.Ran
	}
	if ran != int64(jobs) {
		b.Fatalf("the workers ran %d handlers for %d jobs", ran, jobs)
	}
	if err := prod.Sync(ctx); err != nil {
		b.Fatal(err)
	}
	counts, err := prod.CountJobs(ctx, core.JobFilter{Queue: "fleet"})
	if err != nil || counts[core.StateSucceeded] != int64(jobs) {
		b.Fatalf("counts %v, %v; want %d succeeded", counts, err, jobs)
	}
	perJob := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(jobs) }
	b.ReportMetric(float64(jobs)/drain.Seconds(), "jobs/s")
	b.ReportMetric(perJob(workCPU), "worker-cpu-µs/job")
	b.ReportMetric(perJob(srvCPU), "server-cpu-µs/job")
	b.ReportMetric(perJob(workCPU+srvCPU), "cpu-µs/job")
}

var fleetTask = boson.NewTask[int, int]("fleet-noop")

// natsServerBinary is the nats-server the fleet and retained benchmarks
// run: $BOSON_FLEET_NATS_SERVER, else nats-server on PATH, else
// /usr/sbin/nats-server.
func natsServerBinary(t testing.TB) string {
	bin := os.Getenv("BOSON_FLEET_NATS_SERVER")
	if bin == "" {
		bin, _ = exec.LookPath("nats-server")
	}
	if bin == "" {
		bin = "/usr/sbin/nats-server"
	}
	if _, err := os.Stat(bin); err != nil {
		requireService(t, "nats", "nats-server binary "+bin)
	}
	return bin
}

// startNATSProcess starts bin as a JetStream server on a free loopback
// port with its store in dir, stopped when t ends, and connects to it.
func startNATSProcess(t testing.TB, bin, dir string) (*exec.Cmd, string, *nats.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	srv := exec.Command(bin, "-a", "127.0.0.1", "-p", strconv.Itoa(port), "-js", "-sd", filepath.Join(dir, "js"))
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		nc, err := nats.Connect(url)
		if err == nil {
			t.Cleanup(nc.Close)
			return srv, url, nc
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("server %s did not answer: %v", bin, err)
		}
	}
}

// TestFleetWorkerChild is a worker process of BenchmarkFleetNATS; it does
// nothing unless started by it.
func TestFleetWorkerChild(t *testing.T) {
	url := os.Getenv(envFleetURL)
	if url == "" {
		return
	}
	_ = os.Getenv(envFleetJobs)
	dir, id := os.Getenv(envFleetDir), os.Getenv(envFleetID)
	ctx := context.Background()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	b, err := natsq.New(ctx, nc, natsq.Options{Namespace: os.Getenv(envFleetNS), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var ran atomic.Int64
	w, err := boson.NewWorker(b, boson.WorkerOptions{ID: "fleet-" + id, Queues: []string{"fleet"}, Concurrency: 100, Logger: quiet,
		RetentionInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := boson.Register(w, fleetTask, func(_ context.Context, n int) (int, error) { ran.Add(1); return n, nil }); err != nil {
		t.Fatal(err)
	}
	cpu0 := selfCPU()
	if err := os.WriteFile(filepath.Join(dir, "ready-"+id), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	waitFile(t, filepath.Join(dir, "go"))
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	report := func() {
		tmp := filepath.Join(dir, "ran-"+id+".tmp")
		if os.WriteFile(tmp, []byte(strconv.FormatInt(ran.Load(), 10)), 0o600) == nil {
			_ = os.Rename(tmp, filepath.Join(dir, "ran-"+id))
		}
	}
	for {
		report()
		if _, err := os.Stat(filepath.Join(dir, "stop")); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := w.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(fleetResult{CPU: selfCPU() - cpu0, Ran: ran.Load()})
	if err := os.WriteFile(filepath.Join(dir, "result-"+id), data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// waitFile waits until path exists.
func waitFile(t testing.TB, path string) {
	t.Helper()
	for start := time.Now(); ; time.Sleep(2 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Since(start) > 2*time.Minute {
			t.Fatalf("timed out waiting for %s", path)
		}
	}
}

// selfCPU is this process's user and system CPU time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procCPU is the user and system CPU time of process pid, from
// /proc/pid/stat (in clock ticks of 10 ms).
func procCPU(t testing.TB, pid int) time.Duration {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}
