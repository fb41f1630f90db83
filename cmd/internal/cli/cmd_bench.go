package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/boson-go/boson/cmd/internal/bench"
	"github.com/boson-go/boson/cmd/internal/store"
	"github.com/boson-go/boson/cmd/soak"
)

type benchFlags struct {
	cfg                     bench.Config
	scenarios               string
	svg, out, from, cpuprof string
	memprof                 string
	progress, noProgress    bool
	markdown                bool
	keep, quick             bool
	privatePG               bool
	pgSet                   []string
	soakSVG                 string
}

func init() {
	register(&command{
		name:    "bench",
		args:    "[URL...]",
		summary: "benchmark a store through the runtime, against its raw ceiling",
		help: `Benchmarks each store (the URLs given as arguments, else --url, $BOSON_URL or
the default) through the real runtime and reports:

  ceiling     the store alone: batched enqueue, then loops that claim and
              complete batches straight on the backend; single raw round trips
              (on NATS the ceiling's rates are raw JetStream's: async publish,
              then pull loops that fetch and ack)
  batch-noop  spawn N jobs in batches, then drain them with W handler slots
  batch-work  the same with a handler that works for --work (1 ms)
  batch-limit batch-noop's drain again, each job with one of 100 limit keys
              under a per-key running limit that no key reaches, beside
              batch-noop: the ratio of the two drains is the cost of a limit
              (at least 0.90). Needs a store with flow control; not run
              unless named in --scenarios
  mixed       spawn small batches at --mixed-rate while the worker drains
  roundtrip   one job at a time through an idle worker: spawn to start/done
  idle        backend calls (and commands sent to the server) per second of a
              worker with nothing to do
  scaling     drain rate with --scale-large jobs queued vs --scale-small
              (not run unless named in --scenarios: it takes minutes);
              --scale-churn first runs that many jobs through the large
              queue, so that its backlog sits beside finished jobs
  soak        a steady load (--soak-rate jobs/s for --soak-duration, batches
              of --soak-batch, no-op and working handlers by turns) with
              retention on, sampled every --soak-interval: drain rate,
              spawn-to-start p50/p99 from the store's own timestamps
              (creation to first start), and on PostgreSQL table and index
              sizes, dead tuples and the oldest snapshot's age; then the same
              load with a REPEATABLE READ transaction holding the xmin
              horizon for the whole run (--soak-hold). Not run unless named.
              --private-postgres runs it on a private server made with initdb
              (autovacuum on, defaults otherwise); --soak-svg draws it.

With --defaults each batch scenario runs a second time, beside the tuned -w,
with a worker made from boson.WorkerOptions{} as a user would write it (only
its queue set), and the ratio of the two drains is judged.

Throughputs are jobs/s; latencies run from the spawn call to the handler's
start and to the store's acknowledgement of the completion. Each figure is the
median of --runs runs and is shown as a fraction of the ceiling. CPU is the
process's (not the server's). Every run checks itself: each job ran and
completed exactly once and the store's counts agree; a failed check exits 5.

Each run uses a fresh schema, key prefix, namespace or temporary SQLite file
below the one the URL names, and deletes it at the end (--keep keeps it).`,
		flags: func(fs *flag.FlagSet, c *call) {
			d := bench.DefaultConfig
			bf := &benchFlags{}
			c.opts = bf
			fs.IntVar(&bf.cfg.Jobs, "n", d.Jobs, "`jobs` per batch spawn and drain (and per ceiling run)")
			fs.IntVar(&bf.cfg.Concurrency, "w", d.Concurrency, "worker `slots` (concurrent handlers)")
			fs.IntVar(&bf.cfg.Runs, "runs", d.Runs, "repeat each scenario this many `times`; figures are medians")
			fs.StringVar(&bf.scenarios, "scenarios", strings.Join(d.Scenarios, ","), "comma-separated `list` from: "+strings.Join(bench.AllScenarios, ","))
			fs.IntVar(&bf.cfg.SpawnBatch, "spawn-batch", d.SpawnBatch, "jobs per spawn `call`")
			fs.IntVar(&bf.cfg.Spawners, "spawners", d.Spawners, "concurrent spawning `goroutines`")
			fs.DurationVar(&bf.cfg.Work, "work", d.Work, "how long the working handler sleeps")
			fs.IntVar(&bf.cfg.MixedRate, "mixed-rate", d.MixedRate, "mixed load spawn `rate` in jobs/s")
			fs.DurationVar(&bf.cfg.MixedDuration, "mixed-duration", d.MixedDuration, "how long the mixed load spawns")
			fs.IntVar(&bf.cfg.RoundTrips, "round-trips", d.RoundTrips, "single jobs timed by the round-trip `count`")
			fs.IntVar(&bf.cfg.CeilingBatch, "ceiling-batch", d.CeilingBatch, "claim `limit` of the raw ceiling loop")
			fs.IntVar(&bf.cfg.CeilingLoops, "ceiling-loops", d.CeilingLoops, "concurrent raw claim-and-complete `loops`")
			fs.IntVar(&bf.cfg.ScaleSmall, "scale-small", d.ScaleSmall, "small backlog of the scaling scenario (`jobs`)")
			fs.IntVar(&bf.cfg.ScaleLarge, "scale-large", d.ScaleLarge, "large backlog of the scaling scenario (`jobs`)")
			fs.IntVar(&bf.cfg.ScaleMeasure, "scale-measure", d.ScaleMeasure, "`jobs` drained and timed from each backlog")
			fs.IntVar(&bf.cfg.ScaleChurn, "scale-churn", d.ScaleChurn, "`jobs` claimed and completed on the large backlog's queue before it is filled (dead tuples on PostgreSQL)")
			fs.DurationVar(&bf.cfg.IdleDuration, "idle-duration", d.IdleDuration, "how long the idle worker is watched")
			fs.DurationVar(&bf.cfg.StallTimeout, "stall-timeout", d.StallTimeout, "fail a phase that makes no progress for this long")
			fs.BoolVar(&bf.quick, "quick", false, "a small run for smoke tests: 2,000 jobs, one run, short mixed and idle phases")
			fs.StringVar(&bf.svg, "svg", "", "write an SVG chart of the results to `file`")
			fs.StringVar(&bf.svg, "chart", "", "same as --svg")
			fs.StringVar(&bf.out, "out", "", "also write the JSON report to `file`")
			fs.StringVar(&bf.from, "from", "", "do not run: read JSON reports from these comma-separated `files` and print/chart them")
			fs.StringVar(&bf.cpuprof, "cpuprofile", "", "write a CPU profile of the whole run to `file`")
			fs.StringVar(&bf.memprof, "memprofile", "", "write a heap profile (allocations of the whole run) to `file` at the end")
			fs.BoolVar(&bf.markdown, "markdown", false, "print Markdown tables (as in docs/benchmarks.md) instead of text tables")
			fs.BoolVar(&bf.progress, "progress", false, "draw progress bars on stderr even when it is not a terminal")
			fs.BoolVar(&bf.noProgress, "no-progress", false, "never draw progress bars")
			fs.BoolVar(&bf.keep, "keep", false, "run in the store the URL names and keep the benchmark's jobs")
			fs.BoolVar(&bf.cfg.Defaults, "defaults", false, "also run each batch scenario with boson.WorkerOptions{} (only the queue set), beside -w")
			fs.IntVar(&bf.cfg.Soak.Rate, "soak-rate", d.Soak.Rate, "soak: offered load in jobs/s")
			fs.DurationVar(&bf.cfg.Soak.Duration, "soak-duration", d.Soak.Duration, "soak: how long the load is offered")
			fs.DurationVar(&bf.cfg.Soak.Interval, "soak-interval", d.Soak.Interval, "soak: how often the load is sampled")
			fs.IntVar(&bf.cfg.Soak.Batch, "soak-batch", d.Soak.Batch, "soak: jobs per spawn `call`")
			fs.IntVar(&bf.cfg.Soak.Spawners, "soak-spawners", d.Soak.Spawners, "soak: concurrent spawning `goroutines`")
			fs.DurationVar(&bf.cfg.Soak.Retention, "soak-retention", d.Soak.Retention, "soak: how long finished jobs are kept (the queue's RetentionTTL)")
			fs.DurationVar(&bf.cfg.Soak.RetentionInterval, "soak-retention-interval", d.Soak.RetentionInterval, "soak: the worker's RetentionInterval")
			fs.StringVar(&bf.cfg.Soak.Hold, "soak-hold", d.Soak.Hold, "soak: run without and with a transaction holding the xmin horizon (`both`), without (off) or with it only (only); PostgreSQL only")
			fs.StringVar(&bf.soakSVG, "soak-svg", "", "write an SVG chart of the soak's samples to `file`")
			fs.BoolVar(&bf.privatePG, "private-postgres", false, "start a private PostgreSQL server (initdb and pg_ctl, autovacuum on, defaults otherwise) in a temporary directory and bench it")
			fs.Func("pg-set", "with --private-postgres, a server `name=value` setting (repeatable)", func(v string) error {
				bf.pgSet = append(bf.pgSet, v)
				return nil
			})
		},
		run: runBench,
	})
}

// benchOut is the JSON shape of bench.
type benchOut struct {
	Reports []*bench.Report `json:"reports"`
}

func runBench(ctx context.Context, c *call) error {
	f := c.opts.(*benchFlags)
	cfg := f.cfg
	cfg.Scenarios = nil
	for _, s := range strings.Split(f.scenarios, ",") {
		if s = strings.TrimSpace(s); s != "" {
			cfg.Scenarios = append(cfg.Scenarios, s)
		}
	}
	if f.quick {
		set := map[string]bool{}
		c.fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
		quick := map[string]func(){
			"n":              func() { cfg.Jobs = 2_000 },
			"runs":           func() { cfg.Runs = 1 },
			"w":              func() { cfg.Concurrency = 20 },
			"mixed-rate":     func() { cfg.MixedRate = 1_000 },
			"mixed-duration": func() { cfg.MixedDuration = 500_000_000 },
			"round-trips":    func() { cfg.RoundTrips = 20 },
			"idle-duration":  func() { cfg.IdleDuration = 1_000_000_000 },
			"scale-small":    func() { cfg.ScaleSmall = 1_000 },
			"scale-large":    func() { cfg.ScaleLarge = 5_000 },
			"scale-measure":  func() { cfg.ScaleMeasure = 500 },
			"soak-rate":      func() { cfg.Soak.Rate = 500 },
			"soak-duration":  func() { cfg.Soak.Duration = 20 * time.Second },
			"soak-interval":  func() { cfg.Soak.Interval = 5 * time.Second },
		}
		for name, apply := range quick {
			if !set[name] {
				apply()
			}
		}
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	var reports []*bench.Report
	if f.from != "" {
		if len(c.args) > 0 {
			return usagef("--from reads reports; it takes no store URLs")
		}
		for _, path := range strings.Split(f.from, ",") {
			b, err := os.ReadFile(strings.TrimSpace(path))
			if err != nil {
				return err
			}
			var o benchOut
			if err := json.Unmarshal(b, &o); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			reports = append(reports, o.Reports...)
		}
	} else {
		if f.cpuprof != "" {
			pf, err := os.Create(f.cpuprof)
			if err != nil {
				return err
			}
			if err := pprof.StartCPUProfile(pf); err != nil {
				return err
			}
			defer func() { pprof.StopCPUProfile(); _ = pf.Close() }()
		}
		if f.memprof != "" {
			defer func() {
				if pf, err := os.Create(f.memprof); err == nil {
					_ = pprof.Lookup("allocs").WriteTo(pf, 0)
					_ = pf.Close()
				}
			}()
		}
		urls := c.args
		if f.privatePG {
			srv, err := soak.StartServer(ctx, soak.ServerOptions{Settings: f.pgSet})
			if err != nil {
				return err
			}
			defer func() {
				if err := srv.Stop(); err != nil {
					fmt.Fprintf(c.env.Stderr, "boson bench: stopping the private PostgreSQL: %v\n", err)
				}
			}()
			fmt.Fprintf(c.env.Stderr, "boson bench: private PostgreSQL %s at %s (initdb defaults%s)\n", srv.Version, srv.URL, settingsNote(f.pgSet))
			urls = append(urls, srv.URL)
		} else if len(f.pgSet) > 0 {
			return usagef("--pg-set applies to --private-postgres only")
		}
		if len(urls) == 0 {
			urls = []string{c.storeURL()}
		}
		var prog io.Writer
		if (c.env.Interactive || f.progress) && !f.noProgress {
			prog = c.env.Stderr
		}
		for _, u := range urls {
			rep, err := benchOne(ctx, c, u, cfg, prog, f.keep)
			if rep != nil && rep.Kind != "" {
				reports = append(reports, rep)
			}
			if err != nil {
				return fmt.Errorf("%s: %w", store.Redact(u), err)
			}
		}
	}
	if f.out != "" {
		b, err := json.MarshalIndent(benchOut{Reports: reports}, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(f.out, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	if f.svg != "" {
		if err := soak.WriteFile(f.svg, func(w io.Writer) error { return bench.WriteSVG(w, reports) }); err != nil {
			return err
		}
	}
	if f.soakSVG != "" {
		var runs []*soak.Run
		for _, rep := range reports {
			runs = append(runs, rep.Soak...)
		}
		if err := soak.WriteFile(f.soakSVG, func(w io.Writer) error { return soak.WriteSVG(w, runs) }); err != nil {
			return err
		}
	}
	if c.jsonOut {
		if err := c.printJSON(benchOut{Reports: reports}); err != nil {
			return err
		}
	} else {
		for i, rep := range reports {
			if i > 0 {
				c.printf("\n")
			}
			write := bench.WriteTable
			if f.markdown {
				write = bench.WriteMarkdown
			}
			if err := write(c.env.Stdout, rep); err != nil {
				return err
			}
		}
	}
	var failed []string
	for _, rep := range reports {
		if !rep.OK() {
			failed = append(failed, rep.Kind)
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(c.env.Stderr, "boson bench: self-check FAILED on %s\n", strings.Join(failed, ", "))
		return &checkError{"self-check failed"}
	}
	return nil
}

// benchOne opens one isolated store, runs the benchmark on it and closes it.
func benchOne(ctx context.Context, c *call, rawURL string, cfg bench.Config, prog io.Writer, keep bool) (*bench.Report, error) {
	st, err := store.Open(ctx, rawURL, store.Options{Isolate: !keep})
	if err != nil {
		return nil, err
	}
	defer func() { _ = st.Close() }()
	if c.env.wrapBackend != nil {
		st.Backend = c.env.wrapBackend(st.Backend)
	}
	// A fresh (isolated) store always needs its schema.
	if !c.noMigrate || !keep {
		if err := st.Migrate(ctx); err != nil {
			return nil, err
		}
	}
	var logTo io.Writer
	if prog != nil {
		logTo = c.env.Stderr
	}
	rep, err := bench.Run(ctx, bench.Store{Backend: st.Backend, Kind: st.Kind, Location: st.Location, Wire: st.WireCalls,
		PostgresURL: rawURL, Schema: st.Schema}, cfg, prog, logTo)
	if err != nil && rep != nil {
		rep.Kind = st.Kind
	}
	if err != nil && errors.Is(err, context.Canceled) {
		return rep, fmt.Errorf("interrupted: %w", err)
	}
	return rep, err
}

// settingsNote lists the private server's extra settings, if any.
func settingsNote(set []string) string {
	if len(set) == 0 {
		return ""
	}
	return "; " + strings.Join(set, ", ")
}
