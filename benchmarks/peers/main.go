// Command peers runs boson beside the queues people compare it with, on the
// same stores, in one sitting: River on PostgreSQL, asynq on Redis, goqite
// on SQLite and a raw JetStream fetch-and-ack loop on NATS. Each run starts
// from fresh state (a new schema, queue, file or stream), boson and its peer
// take turns, and the report gives each side's medians and the median of
// the paired ratios (boson/peer): batch spawn, batch drain with no-op
// handlers (boson both tuned and with WorkerOptions{}), and on PostgreSQL a
// steady load against River with and without a transaction holding the xmin
// horizon, measured by the same soak driver.
//
// The boson side is the built command ("boson bench ... --out"), the
// instrument of docs/benchmarks.md; the peers are linked in through their
// public APIs. This module is apart from boson's own, so that none of the
// peers becomes a dependency of boson.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	"github.com/boson-go/boson/cmd/soak"
)

// options are the command's flags.
type options struct {
	stores           string
	runs, jobs       int
	workers          int
	spawnBatch       int
	spawners         int
	postgres, redis  string
	nats, sqliteDir  string
	bosonBin         string
	riverCooldown    time.Duration
	riverPoll        time.Duration
	asynqConcurrency int
	goqiteLimit      int
	goqiteSync       string
	jsLoops, jsFetch int
	batch, steady    bool
	steadyPostgres   string
	steadyRuns       int
	steadyHold       string
	steadySpec       soak.Spec
	retention        time.Duration
	work             time.Duration
	outMD, outJSON   string
	svg              string
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
}

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func parse(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("peers", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.stores, "stores", "postgres,redis,sqlite,nats", "comma-separated stores to compare on: postgres (River), redis (asynq), sqlite (goqite), nats (raw JetStream)")
	fs.IntVar(&o.runs, "runs", 3, "alternating runs per store; figures are medians")
	fs.IntVar(&o.jobs, "n", 50_000, "jobs per batch spawn and drain")
	fs.IntVar(&o.workers, "workers", 2000, "boson's tuned -w, River's MaxWorkers, and the steady load's workers on both")
	fs.IntVar(&o.spawnBatch, "spawn-batch", 1000, "jobs per batch insert call (boson, River, JetStream's publishes in flight, goqite's transaction)")
	fs.IntVar(&o.spawners, "spawners", 2, "goroutines inserting at once (asynq: 4x, one task per call)")
	fs.StringVar(&o.postgres, "postgres", env("BOSON_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"), "PostgreSQL `URL` of the batch comparison")
	fs.StringVar(&o.redis, "redis", env("BOSON_TEST_REDIS_URL", "redis://127.0.0.1:6379/0"), "Redis `URL`")
	fs.StringVar(&o.nats, "nats", env("BOSON_TEST_NATS_URL", "nats://127.0.0.1:4222"), "NATS `URL`")
	fs.StringVar(&o.sqliteDir, "sqlite-dir", os.TempDir(), "`directory` of the SQLite files (one fresh file per run)")
	fs.StringVar(&o.bosonBin, "boson", "", "the boson command to run; empty builds it with go build")
	fs.DurationVar(&o.riverCooldown, "river-fetch-cooldown", 2*time.Millisecond, "River's FetchCooldown")
	fs.DurationVar(&o.riverPoll, "river-fetch-poll", time.Second, "River's FetchPollInterval")
	fs.IntVar(&o.asynqConcurrency, "asynq-concurrency", 100, "asynq's Concurrency")
	fs.IntVar(&o.goqiteLimit, "goqite-limit", 100, "goqite's jobs.Runner Limit")
	fs.StringVar(&o.goqiteSync, "goqite-synchronous", "FULL", "goqite's SQLite synchronous setting (boson's SQLite default is FULL)")
	fs.IntVar(&o.jsLoops, "jetstream-loops", 2, "raw JetStream fetch-and-ack loops")
	fs.IntVar(&o.jsFetch, "jetstream-fetch", 500, "messages per JetStream Fetch")
	fs.BoolVar(&o.batch, "batch", true, "run the batch comparison on every store")
	fs.BoolVar(&o.steady, "steady", true, "run the steady load against River (PostgreSQL)")
	fs.StringVar(&o.steadyPostgres, "steady-postgres", "private", "PostgreSQL `URL` of the steady load, or private: a server made with initdb (autovacuum on, defaults otherwise)")
	fs.IntVar(&o.steadyRuns, "steady-runs", 1, "alternating runs of the steady load")
	fs.StringVar(&o.steadyHold, "steady-hold", "both", "steady load without and with the held xmin horizon (both), without (off) or with it only (only)")
	fs.IntVar(&o.steadySpec.Rate, "steady-rate", 3000, "steady load: offered jobs/s")
	fs.DurationVar(&o.steadySpec.Duration, "steady-duration", 3*time.Minute, "steady load: how long it is offered")
	fs.DurationVar(&o.steadySpec.Interval, "steady-interval", time.Minute, "steady load: sampling interval")
	fs.IntVar(&o.steadySpec.Batch, "steady-batch", 10, "steady load: jobs per spawn call")
	fs.IntVar(&o.steadySpec.Spawners, "steady-spawners", 4, "steady load: spawning goroutines")
	fs.DurationVar(&o.steadySpec.Stall, "steady-stall", time.Minute, "steady load: give up on a backlog that does not move for this long")
	fs.DurationVar(&o.retention, "retention", time.Minute, "steady load: how long finished jobs are kept (boson's RetentionTTL, River's CompletedJobRetentionPeriod)")
	fs.DurationVar(&o.work, "work", time.Millisecond, "steady load: the working handler's sleep (every other batch)")
	fs.StringVar(&o.outMD, "markdown", "", "write the Markdown report to `file`")
	fs.StringVar(&o.outJSON, "json", "", "write the JSON report to `file`")
	fs.StringVar(&o.svg, "svg", "", "write the steady load's chart to `file`")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	for _, s := range strings.Split(o.stores, ",") {
		if !slices.Contains([]string{"postgres", "redis", "sqlite", "nats"}, strings.TrimSpace(s)) {
			return nil, fmt.Errorf("unknown store %q; want postgres, redis, sqlite or nats", s)
		}
	}
	if o.runs < 1 || o.jobs < 1 || o.workers < 1 || o.spawnBatch < 1 || o.spawners < 1 || o.steadyRuns < 1 ||
		o.asynqConcurrency < 1 || o.goqiteLimit < 1 || o.jsLoops < 1 || o.jsFetch < 1 {
		return nil, errors.New("counts must be at least 1")
	}
	if !slices.Contains([]string{"both", "off", "only"}, o.steadyHold) {
		return nil, fmt.Errorf("steady-hold %q; want both, off or only", o.steadyHold)
	}
	if s := strings.ToUpper(o.goqiteSync); s != "FULL" && s != "NORMAL" {
		return nil, fmt.Errorf("goqite-synchronous %q; want FULL or NORMAL", o.goqiteSync)
	}
	if err := o.steadySpec.Validate(); err != nil && o.steady {
		return nil, err
	}
	return o, nil
}

// batchPeer is a peer of the batch comparison.
type batchPeer interface {
	name() string
	settings() []soak.Setting
	Batch(ctx context.Context, n int) (BatchFigures, error)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parse(args, stderr)
	if err != nil {
		return err
	}
	say := func(format string, a ...any) { fmt.Fprintf(stderr, format+"\n", a...) }
	tmp, err := os.MkdirTemp("", "boson-peers-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if o.bosonBin == "" {
		say("building boson")
		if o.bosonBin, err = buildBoson(ctx, tmp); err != nil {
			return err
		}
	}
	b := &Boson{Bin: o.bosonBin, Workers: o.workers, SpawnBatch: o.spawnBatch, Spawners: o.spawners, Dir: tmp, Work: o.work}
	rep := &Report{Started: time.Now().UTC(), Machine: machine(), LoadStart: soak.LoadAvg(), Args: args, Jobs: o.jobs, Runs: o.runs, Boson: b.settings()}
	for _, store := range strings.Split(o.stores, ",") {
		if !o.batch {
			break
		}
		store = strings.TrimSpace(store)
		url, peer := o.peer(store)
		sr := &StoreReport{Store: store, Peer: peer.name(), PeerSettings: peer.settings()}
		rep.Stores = append(rep.Stores, sr)
		for i := range o.runs {
			bosonFirst := i%2 == 0
			for turn := range 2 {
				if (turn == 0) == bosonFirst {
					f, err := b.Batch(ctx, url, o.jobs)
					if err != nil {
						return fmt.Errorf("%s: %w", store, err)
					}
					sr.Boson = append(sr.Boson, f)
					say("%s run %d boson: spawn %s/s, drain %s/s (-w %d), %s/s (WorkerOptions{})", store, i+1, human(f.Spawn), human(f.Drain), o.workers, human(f.DrainDefaults))
				} else {
					f, err := peer.Batch(ctx, o.jobs)
					if err != nil {
						return fmt.Errorf("%s: %s: %w", store, peer.name(), err)
					}
					sr.PeerRuns = append(sr.PeerRuns, f)
					say("%s run %d %s: spawn %s/s, drain %s/s", store, i+1, peer.name(), human(f.Spawn), human(f.Drain))
				}
			}
		}
	}
	if o.steady && strings.Contains(o.stores, "postgres") {
		if err := o.runSteady(ctx, b, rep, say); err != nil {
			return err
		}
	}
	rep.LoadEnd = soak.LoadAvg()
	rep.Seconds = time.Since(rep.Started).Seconds()
	if err := WriteMarkdown(stdout, rep); err != nil {
		return err
	}
	if o.outMD != "" {
		if err := soak.WriteFile(o.outMD, func(w io.Writer) error { return WriteMarkdown(w, rep) }); err != nil {
			return err
		}
	}
	if o.outJSON != "" {
		if err := soak.WriteFile(o.outJSON, func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(rep)
		}); err != nil {
			return err
		}
	}
	if o.svg != "" && len(rep.Steady) > 0 {
		if err := soak.WriteFile(o.svg, func(w io.Writer) error { return soak.WriteSVG(w, rep.Steady) }); err != nil {
			return err
		}
	}
	return nil
}

// peer returns the store URL of boson's side and the peer of a store.
func (o *options) peer(store string) (string, batchPeer) {
	switch store {
	case "postgres":
		return o.postgres, &River{URL: o.postgres, MaxWorkers: o.workers, FetchCooldown: o.riverCooldown, FetchPoll: o.riverPoll,
			Spawners: o.spawners, PerCall: o.spawnBatch}
	case "redis":
		return o.redis, &Asynq{URL: o.redis, Concurrency: o.asynqConcurrency, Spawners: 4 * o.spawners}
	case "sqlite":
		return "sqlite:" + o.sqliteDir + "/peers.db", &Goqite{Dir: o.sqliteDir, Limit: o.goqiteLimit, Synchronous: strings.ToUpper(o.goqiteSync), PerCall: o.spawnBatch}
	default:
		return o.nats, &JetStream{URL: o.nats, Loops: o.jsLoops, Fetch: o.jsFetch, PerCall: o.spawnBatch, Spawners: o.spawners}
	}
}

// runSteady offers the same steady load to boson and River on one
// PostgreSQL, taking turns, with and without the held horizon.
func (o *options) runSteady(ctx context.Context, b *Boson, rep *Report, say func(string, ...any)) error {
	url := o.steadyPostgres
	if url == "private" {
		srv, err := soak.StartServer(ctx, soak.ServerOptions{})
		if err != nil {
			return err
		}
		defer func() { _ = srv.Stop() }()
		url = srv.URL
		say("steady load on a private PostgreSQL %s (initdb defaults, autovacuum on)", srv.Version)
	}
	r := &River{URL: url, MaxWorkers: o.workers, FetchCooldown: o.riverCooldown, FetchPoll: o.riverPoll, Retention: o.retention,
		Spawners: o.steadySpec.Spawners, PerCall: o.steadySpec.Batch}
	report := func(who string) func(soak.Sample) {
		return func(s soak.Sample) {
			say("steady %s at %v: offered %s/s, drained %s/s, backlog %d, p50 %.1f ms, p99 %.1f ms", who,
				time.Duration(s.End*1e9).Round(time.Second), human(s.Offered), human(s.Drained), s.Backlog, s.StartP50, s.StartP99)
		}
	}
	for i := range o.steadyRuns {
		bosonFirst := i%2 == 0
		for turn := range 2 {
			if (turn == 0) == bosonFirst {
				say("steady run %d: boson (%v at %d jobs/s, hold %s)", i+1, o.steadySpec.Duration, o.steadySpec.Rate, o.steadyHold)
				runs, err := b.Steady(ctx, url, o.steadySpec, o.retention, o.steadyHold)
				if err != nil {
					return err
				}
				rep.Steady = append(rep.Steady, runs...)
				continue
			}
			for _, held := range []bool{false, true} {
				if (held && o.steadyHold == "off") || (!held && o.steadyHold == "only") {
					continue
				}
				spec := o.steadySpec
				spec.Held = held
				name := "River"
				if held {
					name += ", xmin held"
				}
				say("steady run %d: %s", i+1, name)
				run, err := r.Steady(ctx, spec, o.work, report(name))
				if err != nil {
					return err
				}
				rep.Steady = append(rep.Steady, run)
			}
		}
	}
	return nil
}
