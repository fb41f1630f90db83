package boson_test

import (
	"context"
	"fmt"
	"time"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/core"
	boson "github.com/boson-go/boson/runtime"
)

// Cron expressions: the next ticks of "at 09:30 on weekdays".
func ExampleParseCron() {
	c, err := boson.ParseCron("30 9 * * mon-fri")
	if err != nil {
		panic(err)
	}
	t := time.Date(2026, 3, 13, 12, 0, 0, 0, time.UTC) // a Friday
	for range 3 {
		t = c.Next(t)
		fmt.Println(t.Format("Mon 2006-01-02 15:04"))
	}
	// Output:
	// Mon 2026-03-16 09:30
	// Tue 2026-03-17 09:30
	// Wed 2026-03-18 09:30
}

// Periodic tasks: every process runs the same schedules; the backend keeps
// one job per tick. Here two schedulers share one backend.
func ExampleAddSchedule() {
	ctx := context.Background()
	clock := core.NewManualClock(time.Date(2026, 3, 16, 3, 0, 0, 0, time.UTC))
	backend := mem.New(mem.Options{Clock: clock, Logger: quiet})
	defer backend.Close()
	client, _ := boson.NewClient(backend, boson.ClientOptions{Clock: clock, Logger: quiet})
	report := boson.NewTask[string, struct{}]("nightly-report")

	for range 2 {
		s, _ := boson.NewScheduler(client, boson.SchedulerOptions{Clock: clock, Logger: quiet})
		if err := boson.AddSchedule(s, "nightly", boson.MustParseCron("0 3 * * *"), report, "sales", boson.WithQueue("reports")); err != nil {
			panic(err)
		}
		// In a service: go s.Run(ctx). Here, one pass at 03:00.
		stored, _ := s.RunDue(ctx)
		fmt.Println("stored:", stored)
	}
	page, _ := backend.ListJobs(ctx, core.JobFilter{Queue: "reports"})
	for _, j := range page.Jobs {
		fmt.Println(j.Task, j.IdempotencyKey, j.RunAt.Format(time.RFC3339))
	}
	// Output:
	// stored: 1
	// stored: 0
	// nightly-report periodic-nightly-1773630000 2026-03-16T03:00:00Z
}
