package sqliteq_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/boson-go/boson/backend-sql/sqliteq"
	"github.com/boson-go/boson/core"
)

// Open a file, create its tables, enqueue a job and claim it.
func Example_open() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "boson-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	b, err := sqliteq.Open(ctx, filepath.Join(dir, "jobs.db"), sqliteq.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	if err := b.Migrate(ctx); err != nil {
		log.Fatal(err)
	}

	if _, err := b.Enqueue(ctx, []core.EnqueueRequest{{Queue: "emails", Task: "send", Payload: []byte(`{"to":"ada@example.com"}`)}}); err != nil {
		log.Fatal(err)
	}
	jobs, err := b.Claim(ctx, core.ClaimRequest{Queue: "emails", WorkerID: "worker-1", Limit: 10, LeaseTTL: 30 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(jobs), jobs[0].Task, jobs[0].State, jobs[0].Attempt)
	// Output: 1 send running 1
}
