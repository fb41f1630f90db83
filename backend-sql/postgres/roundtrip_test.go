package postgres_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/boson-go/boson/backend-sql/internal/sqltest"
	"github.com/boson-go/boson/backend-sql/postgres"
	"github.com/boson-go/boson/core"
)

// turnCounter counts network round trips: one per read that returns data
// after writes, however many writes (a pipeline) came before it. It counts
// when a read returns rather than when it starts, because the driver may
// start a read in the background before it writes.
type turnCounter struct {
	mu    sync.Mutex
	wrote bool
	turns int
}

func (c *turnCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.turns
}

type countingConn struct {
	net.Conn
	c *turnCounter
}

func (n countingConn) Write(b []byte) (int, error) {
	n.c.mu.Lock()
	n.c.wrote = true
	n.c.mu.Unlock()
	return n.Conn.Write(b)
}

func (n countingConn) Read(b []byte) (int, error) {
	got, err := n.Conn.Read(b)
	if got > 0 {
		n.c.mu.Lock()
		if n.c.wrote {
			n.c.wrote = false
			n.c.turns++
		}
		n.c.mu.Unlock()
	}
	return got, err
}

// countingBackend returns a migrated backend on a one-connection pool
// whose network reads and writes are counted.
func countingBackend(t *testing.T, opts postgres.Options) (*postgres.Backend, *turnCounter) {
	t.Helper()
	url := sqltest.PostgresURL(t)
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	counter := &turnCounter{}
	dial := cfg.ConnConfig.DialFunc
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return countingConn{Conn: conn, c: counter}, nil
	}
	cfg.MaxConns = 1
	cfg.HealthCheckPeriod = time.Hour
	cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false }
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	opts.Schema = sqltest.Schema(t, pool)
	b, err := postgres.New(pool, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	if err := b.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return b, counter
}

// batch returns n requests of task, every third one with an
// idempotency key that the second batch of a test reuses.
func batch(task string, n, round int) []core.EnqueueRequest {
	reqs := make([]core.EnqueueRequest, n)
	for i := range reqs {
		reqs[i] = core.EnqueueRequest{Task: task, Payload: []byte(fmt.Sprintf(`{"i":%d,"round":%d}`, i, round))}
		if i%3 == 0 {
			reqs[i].IdempotencyKey = fmt.Sprintf("%s-k%d", task, i)
			reqs[i].Payload = []byte(fmt.Sprintf(`{"i":%d}`, i))
		}
	}
	return reqs
}

// TestEnqueueBatchIsOneRoundTrip counts the network round trips of a
// batch enqueue of 100 jobs: one, with the server's clock or a
// configured one, with rate limits and reused idempotency keys, and
// inside a caller's transaction.
func TestEnqueueBatchIsOneRoundTrip(t *testing.T) {
	for _, withClock := range []bool{false, true} {
		t.Run(fmt.Sprintf("clock=%v", withClock), func(t *testing.T) {
			ctx := context.Background()
			var opts postgres.Options
			if withClock {
				opts.Clock = core.NewManualClock(time.UnixMilli(1_800_000_000_000))
			}
			b, counter := countingBackend(t, opts)
			if err := b.PutTaskConfig(ctx, core.TaskConfig{Task: "limited", MaxInFlight: 1000, MaxEnqueuePerSecond: 1000}); err != nil {
				t.Fatal(err)
			}
			// The counter sees round trips: begin, a statement, commit.
			before := counter.count()
			if err := pgx.BeginFunc(ctx, b.Pool(), func(tx pgx.Tx) error {
				_, err := tx.Exec(ctx, "SELECT 1")
				return err
			}); err != nil {
				t.Fatal(err)
			}
			if got := counter.count() - before; got != 3 {
				t.Fatalf("a transaction of one statement took %d round trips, want 3", got)
			}
			// The first call of each statement on a connection prepares it.
			if _, err := b.Enqueue(ctx, batch("warm", 100, 0)); err != nil {
				t.Fatal(err)
			}
			for round, task := range []string{"plain", "limited", "limited"} {
				before = counter.count()
				res, err := b.Enqueue(ctx, batch(task, 100, round))
				if err != nil {
					t.Fatal(err)
				}
				if got := counter.count() - before; got != 1 {
					t.Fatalf("enqueue of 100 %s jobs took %d round trips, want 1", task, got)
				}
				if len(res) != 100 {
					t.Fatalf("%d results, want 100", len(res))
				}
				reused := 0
				for _, r := range res {
					if r.Reused {
						reused++
					}
				}
				if want := map[int]int{0: 0, 1: 0, 2: 34}[round]; reused != want {
					t.Fatalf("round %d: %d reused, want %d", round, reused, want)
				}
			}

			tx, err := b.Pool().Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tx.Rollback(ctx) }()
			if _, err := b.EnqueueTx(ctx, tx, batch("warm", 100, 1)); err != nil {
				t.Fatal(err)
			}
			before = counter.count()
			if _, err := b.EnqueueTx(ctx, tx, batch("in-tx", 100, 0)); err != nil {
				t.Fatal(err)
			}
			if got := counter.count() - before; got != 1 {
				t.Fatalf("EnqueueTx of 100 jobs took %d round trips, want 1", got)
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestEmptyClaimIsOneRoundTrip: a claim that finds nothing costs one
// round trip while flow control is off (the statement itself says why it
// was empty), and a claim that flow control turned away still claims,
// through the flow claim, the job it was sent for.
func TestEmptyClaimIsOneRoundTrip(t *testing.T) {
	ctx := context.Background()
	b, counter := countingBackend(t, postgres.Options{})
	req := core.ClaimRequest{Queue: "default", WorkerID: "w", Limit: 10, LeaseTTL: time.Minute}
	// The first call of a statement on a connection prepares it.
	if _, err := b.Claim(ctx, req); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		before := counter.count()
		jobs, err := b.Claim(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs) != 0 {
			t.Fatalf("claimed %d jobs from an empty queue", len(jobs))
		}
		if got := counter.count() - before; got != 1 {
			t.Fatalf("an empty claim took %d round trips, want 1", got)
		}
	}
	// A limit turns flow control on behind the backend's back: its next
	// claim goes the single-statement way, is turned away, and must still
	// hand out the job.
	if err := b.PutTaskConfig(ctx, core.TaskConfig{Task: "limited", MaxRunning: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Enqueue(ctx, []core.EnqueueRequest{{Task: "limited"}, {Task: "limited"}}); err != nil {
		t.Fatal(err)
	}
	jobs, err := b.Claim(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 || jobs[0].Task != "limited" {
		t.Fatalf("claimed %v under MaxRunning 1, want one job of task limited", jobs)
	}
}
