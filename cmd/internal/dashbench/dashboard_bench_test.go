package dashbench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/boson-go/boson/admin"
	"github.com/boson-go/boson/cmd/internal/store"
	"github.com/boson-go/boson/conformance/testenv/testreq"
	"github.com/boson-go/boson/core"
	"github.com/jackc/pgx/v5/pgxpool"
)

// BenchmarkDashboardMillionJobs serves the dashboard of one queue that
// holds 1,000,000 retained jobs on Postgres (900,000 succeeded, 100,000
// queued, made by batch enqueues, claims and completions, so that the
// table carries the dead tuples of real work; then vacuumed and analyzed,
// as autovacuum would) and reports the p50 and p90
// of 20 loads of the queue page, of its activity chart and of the queue's
// job list:
//
//	BOSON_TEST_POSTGRES_URL=postgres://... go test -run '^$' -bench . -benchtime 1x ./cmd/internal/dashbench
//
// BOSON_DASHBOARD_JOBS sets another size. BOSON_DASHBOARD_KEEP=1 keeps
// the store in the schema the URL names (?schema=NAME) instead of a fresh
// one that is dropped afterwards, and seeds it only when its queue is
// empty, so that repeated runs measure the same data without seeding it
// again; drop the schema by hand afterwards.
func BenchmarkDashboardMillionJobs(b *testing.B) {
	url := os.Getenv("BOSON_TEST_POSTGRES_URL")
	if url == "" {
		testreq.Unavailable(b, "postgres", "BOSON_TEST_POSTGRES_URL is not set")
	}
	total := 1_000_000
	if v := os.Getenv("BOSON_DASHBOARD_JOBS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 10 {
			b.Fatalf("BOSON_DASHBOARD_JOBS=%q: want a number of at least 10", v)
		}
		total = n
	}
	done := total * 9 / 10
	ctx := context.Background()
	keep := os.Getenv("BOSON_DASHBOARD_KEEP") == "1"
	st, err := store.Open(ctx, url, store.Options{Isolate: !keep})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	be := st.Backend
	counts, err := be.CountJobs(ctx, core.JobFilter{Queue: "big"})
	if err != nil {
		b.Fatal(err)
	}
	if keep && len(counts) > 0 {
		b.Logf("reusing %s: %v", st.Location, counts)
		total, done = 0, 0
	}
	const batch = 5000
	req := make([]core.EnqueueRequest, batch)
	for i := range req {
		req[i] = core.EnqueueRequest{Queue: "big", Task: "t", Payload: []byte(`{"n":1}`), Headers: map[string]string{"tenant": fmt.Sprint(i % 7)}}
	}
	start := time.Now()
	for n := 0; n < total; n += batch {
		if _, err := be.Enqueue(ctx, req[:min(batch, total-n)]); err != nil {
			b.Fatal(err)
		}
	}
	for n := 0; n < done; {
		jobs, err := be.Claim(ctx, core.ClaimRequest{Queue: "big", WorkerID: "w", Limit: min(1000, done-n), LeaseTTL: time.Minute})
		if err != nil || len(jobs) == 0 {
			b.Fatalf("claim: %d jobs, %v", len(jobs), err)
		}
		items := make([]core.Completion, len(jobs))
		for i, j := range jobs {
			items[i] = core.Completion{Lease: j.Lease}
		}
		if _, err := be.Complete(ctx, items); err != nil {
			b.Fatal(err)
		}
		n += len(jobs)
	}
	if total > 0 {
		b.Logf("seeded %d jobs (%d succeeded) in %v", total, done, time.Since(start).Round(time.Second))
	}
	// Autovacuum may be off (as on a test server) or behind; vacuum and
	// analyze as it would, so that the counts read indexes marked visible
	// and the planner knows the tables' sizes.
	if p, ok := be.(interface{ Pool() *pgxpool.Pool }); ok {
		for _, table := range []string{"jobs", "runs"} {
			if _, err := p.Pool().Exec(ctx, `VACUUM ANALYZE "`+st.Schema+`".`+table); err != nil {
				b.Fatal(err)
			}
		}
	}
	h, err := admin.New(admin.Options{Backend: be, Auth: admin.NoAuthReadOnly(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	b.ResetTimer()
	for range b.N {
		for _, page := range []string{"/queues/big", "/queues/big/activity.svg", "/jobs?queue=big"} {
			took := make([]time.Duration, 0, 20)
			for range 20 {
				t0 := time.Now()
				resp, err := http.Get(srv.URL + page)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("GET %s: %s", page, resp.Status)
				}
				took = append(took, time.Since(t0))
			}
			slices.Sort(took)
			b.Logf("GET %-26s p50 %v, p90 %v", page, took[9].Round(100*time.Microsecond), took[17].Round(100*time.Microsecond))
		}
	}
}
