package bosonprom_test

import (
	"context"
	"fmt"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/observability/bosonprom"
	boson "github.com/boson-go/boson/runtime"
	"github.com/prometheus/client_golang/prometheus"
)

// Export a worker's counters and the queue depths of its backend. In a
// service, serve the registry with promhttp.HandlerFor(reg,
// promhttp.HandlerOpts{}) on /metrics.
func Example() {
	ctx := context.Background()
	backend := mem.New(mem.Options{Logger: quiet})
	defer backend.Close()
	client, _ := boson.NewClient(backend, boson.ClientOptions{Logger: quiet})
	worker, _ := boson.NewWorker(backend, boson.WorkerOptions{ID: "worker-1", Logger: quiet})
	_ = boson.Register(worker, double, func(_ context.Context, n int) (int, error) { return 2 * n, nil })
	_ = worker.Start(ctx)
	defer worker.Shutdown(ctx)

	collector, err := bosonprom.New(bosonprom.Options{Workers: []*boson.Worker{worker}, Backend: backend})
	if err != nil {
		panic(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector)

	h, _ := boson.Spawn(ctx, client, double, 21)
	_, _ = h.Wait(ctx)

	families, _ := reg.Gather()
	for _, mf := range families {
		for _, m := range mf.GetMetric() {
			labels := ""
			for _, l := range m.GetLabel() {
				labels += " " + l.GetName() + "=" + l.GetValue()
			}
			switch {
			case mf.GetName() == "boson_worker_executions_total":
				fmt.Printf("%s%s %v\n", mf.GetName(), labels, m.GetCounter().GetValue())
			case mf.GetName() == "boson_queue_jobs" && m.GetGauge().GetValue() > 0:
				fmt.Printf("%s%s %v\n", mf.GetName(), labels, m.GetGauge().GetValue())
			}
		}
	}
	// Output:
	// boson_queue_jobs queue=default state=succeeded 1
	// boson_worker_executions_total queue=default worker=worker-1 1
}
