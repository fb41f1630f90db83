// Package soak runs a steady load against a job queue for a long time and
// reports, per interval, what the queue kept up with: the drain rate
// against the offered rate, the latency from a job's creation to its first
// start as the store recorded them, and for PostgreSQL the size of the
// queue's tables and indexes and their dead tuples, with or without a
// transaction that holds the xmin horizon back for the whole run. It also
// starts private PostgreSQL servers with production settings, and draws the
// runs as an SVG chart and Markdown tables.
//
// It knows nothing of the queue under test: "boson bench --scenarios soak"
// drives boson through it, and the peer comparison drives River through
// the same code, so that both are measured alike.
package soak

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Spec is one steady load.
type Spec struct {
	// Rate is the offered load in jobs per second.
	Rate int
	// Duration is how long the load is offered; Interval how often it is
	// sampled.
	Duration, Interval time.Duration
	// Batch is how many jobs one spawn call sends; Spawners how many
	// goroutines call at once (a slow call delays only its own batch).
	Batch, Spawners int
	// Held runs the load with a REPEATABLE READ transaction open on the
	// probe's database for the whole run (PostgreSQL only).
	Held bool
	// Stall ends the wait for the backlog after the load when no job
	// finishes for this long.
	Stall time.Duration
}

// Validate reports what makes s unusable.
func (s Spec) Validate() error {
	switch {
	case s.Rate < 1:
		return fmt.Errorf("soak: rate must be at least 1 job/s, got %d", s.Rate)
	case s.Duration <= 0 || s.Interval <= 0 || s.Stall <= 0:
		return errors.New("soak: duration, interval and stall timeout must be positive")
	case s.Interval > s.Duration:
		return fmt.Errorf("soak: interval %v is longer than the run (%v)", s.Interval, s.Duration)
	case s.Batch < 1 || s.Spawners < 1:
		return errors.New("soak: batch and spawners must be at least 1")
	case float64(s.Rate)*s.Duration.Seconds() < float64(s.Batch):
		return fmt.Errorf("soak: %d jobs/s for %v is less than one batch of %d", s.Rate, s.Duration, s.Batch)
	}
	return nil
}

// SpawnFunc sends n jobs, numbered from first, in one call.
type SpawnFunc func(ctx context.Context, first, n int) error

// Meter counts what the queue did during a load. The queue's driver calls
// Done for each finished job and Started for each job's first start; all
// methods are safe for concurrent use.
type Meter struct {
	spawned, done atomic.Int64
	mu            sync.Mutex
	hist          histogram
}

// Done counts n finished jobs.
func (m *Meter) Done(n int) { m.done.Add(int64(n)) }

// Started records one job's latency from creation to first start, read
// from the store's own timestamps.
func (m *Meter) Started(d time.Duration) {
	m.mu.Lock()
	m.hist.add(d)
	m.mu.Unlock()
}

// Counts returns the jobs spawned and finished so far.
func (m *Meter) Counts() (spawned, done int64) { return m.spawned.Load(), m.done.Load() }

// cut returns the latencies recorded since the last cut.
func (m *Meter) cut() histogram {
	m.mu.Lock()
	defer m.mu.Unlock()
	h := m.hist
	m.hist = histogram{}
	return h
}

// Sample is one interval of a load.
type Sample struct {
	// End is when the interval ended, in seconds since the load began;
	// Seconds is its length.
	End     float64 `json:"end_s"`
	Seconds float64 `json:"seconds"`
	// Offered and Drained are the jobs spawned and finished per second.
	Offered float64 `json:"offered_per_sec"`
	Drained float64 `json:"drained_per_sec"`
	// Backlog is how many spawned jobs had not finished at the end.
	Backlog int64 `json:"backlog"`
	// Starts is how many first starts the interval saw; StartP50 and
	// StartP99 their latency from creation, in milliseconds.
	Starts   int64   `json:"starts"`
	StartP50 float64 `json:"start_p50_ms"`
	StartP99 float64 `json:"start_p99_ms"`
	// Tables holds the schema's statistics at the end (PostgreSQL).
	Tables *Tables `json:"tables,omitempty"`
}

// Run is the outcome of one load.
type Run struct {
	// System is the queue under test ("boson", "river"); Store its store.
	System string `json:"system"`
	Store  string `json:"store"`
	Held   bool   `json:"held"`
	// Rate, Duration, Interval and Batch repeat the Spec.
	Rate     int     `json:"rate"`
	Duration float64 `json:"duration_s"`
	Interval float64 `json:"interval_s"`
	Batch    int     `json:"batch"`
	// Options are the system's settings (workers, retention, polling).
	Options []Setting `json:"options,omitempty"`
	// Server holds the PostgreSQL server's settings, when there is one.
	Server []Setting `json:"server,omitempty"`
	// Xmin is the snapshot the held transaction kept.
	Xmin    string   `json:"held_xmin,omitempty"`
	Samples []Sample `json:"samples"`
	// Spawned and Done count the jobs; Tail is how long the backlog took
	// to drain after the load ended.
	Spawned int64   `json:"spawned"`
	Done    int64   `json:"done"`
	Tail    float64 `json:"tail_s"`
	Summary Summary `json:"summary"`
	// Problems lists what went wrong: a backlog that never drained, a
	// statistics read that failed, a failed self-check of the caller.
	Problems []string `json:"problems,omitempty"`
}

// Summary condenses a run: the whole load, and its first and last windows
// (a sixth of the samples, at least one, at most five).
type Summary struct {
	Window int `json:"window_samples"`
	// Starts counts the first starts of the whole run, those after the
	// load included; P50, P90 and P99 are their latencies in milliseconds.
	Starts   int64   `json:"starts"`
	Offered  float64 `json:"offered_per_sec"`
	Drained  float64 `json:"drained_per_sec"`
	P50      float64 `json:"start_p50_ms"`
	P90      float64 `json:"start_p90_ms"`
	P99      float64 `json:"start_p99_ms"`
	FirstP99 float64 `json:"first_p99_ms"`
	LastP50  float64 `json:"last_p50_ms"`
	LastP99  float64 `json:"last_p99_ms"`
	// LastOffered and LastDrained are the last window's rates.
	LastOffered float64 `json:"last_offered_per_sec"`
	LastDrained float64 `json:"last_drained_per_sec"`
	MaxBacklog  int64   `json:"max_backlog"`
	// SizeMid and SizeEnd are table plus index bytes at the half-way
	// sample and at the last one; PeakDead the most dead tuples seen.
	SizeMid  int64 `json:"size_mid_bytes,omitempty"`
	SizeEnd  int64 `json:"size_end_bytes,omitempty"`
	PeakDead int64 `json:"peak_dead_tuples,omitempty"`
}

// Steady offers spec's load through spawn, samples m (and probe, when not
// nil) every spec.Interval, then waits for the backlog to drain. With a
// probe, the schema's tables are rewritten first (VACUUM FULL), so that
// each load starts as on fresh tables. An error
// means the load could not be offered; a backlog that does not drain is a
// Problem of the run. report, when not nil, sees each sample as it is made.
func Steady(ctx context.Context, spec Spec, spawn SpawnFunc, m *Meter, probe *Probe, report func(Sample)) (*Run, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	run := &Run{Held: spec.Held, Rate: spec.Rate, Duration: spec.Duration.Seconds(), Interval: spec.Interval.Seconds(), Batch: spec.Batch}
	if probe != nil {
		set, err := probe.Settings(ctx)
		if err != nil {
			return nil, err
		}
		run.Server = set
		if err := probe.Vacuum(ctx); err != nil {
			return nil, err
		}
	}
	if spec.Held {
		if probe == nil {
			return nil, errors.New("soak: holding the xmin horizon needs PostgreSQL")
		}
		h, err := probe.HoldXmin(ctx)
		if err != nil {
			return nil, err
		}
		defer func() { _ = h.Release() }()
		run.Xmin = h.Xmin
	}
	start := time.Now()
	var hists []histogram
	var lastAt = start
	var lastSpawned, lastDone int64
	var probeErr error
	take := func() {
		now := time.Now()
		sp, dn := m.Counts()
		h := m.cut()
		secs := now.Sub(lastAt).Seconds()
		s := Sample{End: now.Sub(start).Seconds(), Seconds: secs, Offered: float64(sp-lastSpawned) / secs,
			Drained: float64(dn-lastDone) / secs, Backlog: sp - dn, Starts: h.n,
			StartP50: h.quantile(0.50), StartP99: h.quantile(0.99)}
		if probe != nil && probeErr == nil {
			t, err := probe.Tables(ctx)
			if err != nil {
				probeErr = err
			} else {
				s.Tables = &t
			}
		}
		lastAt, lastSpawned, lastDone = now, sp, dn
		run.Samples = append(run.Samples, s)
		hists = append(hists, h)
		if report != nil {
			report(s)
		}
	}
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	var mu sync.Mutex // guards the samples between the sampler and the final take
	go func() {
		defer close(sampled)
		t := time.NewTicker(spec.Interval)
		defer t.Stop()
		for {
			select {
			case <-stopSampling:
				return
			case <-t.C:
				mu.Lock()
				take()
				mu.Unlock()
			}
		}
	}()
	err := offer(ctx, spec, spawn, m, start)
	close(stopSampling)
	<-sampled
	mu.Lock()
	if time.Since(lastAt) > spec.Interval/4 || len(run.Samples) == 0 {
		take()
	}
	mu.Unlock()
	loadSecs := time.Since(start).Seconds()
	if err != nil {
		return nil, err
	}
	if probeErr != nil {
		run.Problems = append(run.Problems, probeErr.Error())
	}
	// The backlog: wait until every spawned job finished.
	loadEnd := time.Now()
	last, lastProgress := int64(-1), time.Now()
	for {
		sp, dn := m.Counts()
		if dn >= sp {
			break
		}
		if dn != last {
			last, lastProgress = dn, time.Now()
		} else if time.Since(lastProgress) > spec.Stall {
			run.Problems = append(run.Problems, fmt.Sprintf("backlog did not drain: %d of %d jobs finished, none in %v", dn, sp, spec.Stall))
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	run.Tail = time.Since(loadEnd).Seconds()
	run.Spawned, run.Done = m.Counts()
	run.Summary = summarize(run.Samples, hists, m.cut(), loadSecs)
	return run, nil
}

// offer spawns spec.Rate jobs per second for spec.Duration, in batches due
// at even times from start.
func offer(ctx context.Context, spec Spec, spawn SpawnFunc, m *Meter, start time.Time) error {
	batches := int64(math.Round(float64(spec.Rate) * spec.Duration.Seconds() / float64(spec.Batch)))
	gap := time.Duration(float64(time.Second) * float64(spec.Batch) / float64(spec.Rate))
	var next atomic.Int64
	errs := make(chan error, spec.Spawners)
	for range spec.Spawners {
		go func() {
			for {
				k := next.Add(1) - 1
				if k >= batches || ctx.Err() != nil {
					errs <- ctx.Err()
					return
				}
				if d := time.Until(start.Add(time.Duration(k) * gap)); d > 0 {
					time.Sleep(d)
				}
				if err := spawn(ctx, int(k)*spec.Batch, spec.Batch); err != nil {
					next.Store(batches)
					errs <- fmt.Errorf("soak: spawn: %w", err)
					return
				}
				m.spawned.Add(int64(spec.Batch))
			}
		}()
	}
	var all []error
	for range spec.Spawners {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}

// summarize computes a run's Summary from its samples, their latency
// histograms, and the latencies of the jobs that started after the load.
func summarize(samples []Sample, hists []histogram, tail histogram, loadSecs float64) Summary {
	n := len(samples)
	var s Summary
	if n == 0 {
		return s
	}
	s.Window = max(1, min(5, n/6))
	var all, first, last histogram
	var spawned, done, lastSpawned, lastDone, lastSecs float64
	for i, smp := range samples {
		all.merge(hists[i])
		spawned += smp.Offered * smp.Seconds
		done += smp.Drained * smp.Seconds
		s.MaxBacklog = max(s.MaxBacklog, smp.Backlog)
		if i < s.Window {
			first.merge(hists[i])
		}
		if i >= n-s.Window {
			last.merge(hists[i])
			lastSpawned += smp.Offered * smp.Seconds
			lastDone += smp.Drained * smp.Seconds
			lastSecs += smp.Seconds
		}
		if smp.Tables != nil {
			s.PeakDead = max(s.PeakDead, smp.Tables.DeadTuples)
		}
	}
	all.merge(tail)
	s.Starts = all.n
	s.Offered, s.Drained = spawned/loadSecs, done/loadSecs
	s.LastOffered, s.LastDrained = lastSpawned/lastSecs, lastDone/lastSecs
	s.P50, s.P90, s.P99 = all.quantile(0.50), all.quantile(0.90), all.quantile(0.99)
	s.FirstP99 = first.quantile(0.99)
	s.LastP50, s.LastP99 = last.quantile(0.50), last.quantile(0.99)
	if t := samples[(n-1)/2].Tables; t != nil {
		s.SizeMid = t.TableBytes + t.IndexBytes
	}
	if t := samples[n-1].Tables; t != nil {
		s.SizeEnd = t.TableBytes + t.IndexBytes
	}
	return s
}

// Verdict compares one figure of a run with its goal.
type Verdict struct {
	Goal string `json:"goal"`
	Want string `json:"want"`
	Got  string `json:"got"`
	Met  bool   `json:"met"`
}

// Goals of a soak: without a held transaction the last window keeps up,
// its p99 stays within twice the first window's and the tables stop
// growing; with one, the drain keeps 90% of the offered rate and p99 stays
// under a second.
const (
	KeepUp      = 0.95
	KeepUpHeld  = 0.90
	P99Growth   = 2.0
	SizeGrowth  = 1.10
	HeldP99Max  = 1000.0 // ms
	windowLabel = "last %d interval(s)"
)

// Verdicts judges the run against the soak's goals. The drain is judged
// against the rate the load was meant to offer, not the rate the spawns
// reached: a queue that cannot take its spawns in time falls behind too.
func (r *Run) Verdicts() []Verdict {
	s := r.Summary
	if len(r.Samples) == 0 {
		return nil
	}
	want := float64(r.Rate)
	var out []Verdict
	if !r.Held {
		frac := ratio(s.LastDrained, want)
		out = append(out, Verdict{Goal: "soak: drain of the " + fmt.Sprintf(windowLabel, s.Window), Want: fmt.Sprintf(">= %.0f%% of %s jobs/s", KeepUp*100, rateText(want)),
			Got: fmt.Sprintf("%.1f%% (%s jobs/s; spawns reached %s)", frac*100, rateText(s.LastDrained), rateText(s.LastOffered)), Met: frac >= KeepUp})
		out = append(out, Verdict{Goal: "soak: p99 spawn-to-start, last vs first " + fmt.Sprintf("%d interval(s)", s.Window), Want: fmt.Sprintf("<= %.0fx", P99Growth),
			Got: fmt.Sprintf("%s vs %s", msText(s.LastP99), msText(s.FirstP99)), Met: s.LastP99 <= P99Growth*math.Max(s.FirstP99, 1)})
		if s.SizeEnd > 0 {
			out = append(out, Verdict{Goal: "soak: table + index size, end vs half-way", Want: fmt.Sprintf("<= %.2fx", SizeGrowth),
				Got: fmt.Sprintf("%s vs %s", bytesText(s.SizeEnd), bytesText(s.SizeMid)), Met: float64(s.SizeEnd) <= SizeGrowth*float64(s.SizeMid)})
		}
		return out
	}
	frac := ratio(s.Drained, want)
	out = append(out, Verdict{Goal: "soak, xmin held: drain", Want: fmt.Sprintf(">= %.0f%% of %s jobs/s", KeepUpHeld*100, rateText(want)),
		Got: fmt.Sprintf("%.1f%% (%s jobs/s; spawns reached %s)", frac*100, rateText(s.Drained), rateText(s.Offered)), Met: frac >= KeepUpHeld})
	out = append(out, Verdict{Goal: "soak, xmin held: p99 spawn-to-start", Want: "< " + msText(HeldP99Max),
		Got: msText(s.P99), Met: s.P99 > 0 && s.P99 < HeldP99Max})
	return out
}

func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

// histogram counts latencies in logarithmic buckets 2% wide, from 1 µs to
// about 20 minutes; quantiles are exact to the bucket.
type histogram struct {
	n      int64
	counts [histBuckets]int64
}

const histBuckets = 1060

var histBase = math.Log(1.02)

func (h *histogram) add(d time.Duration) {
	us := float64(d) / float64(time.Microsecond)
	i := 0
	if us > 1 {
		i = min(histBuckets-1, int(math.Log(us)/histBase)+1)
	}
	h.counts[i]++
	h.n++
}

func (h *histogram) merge(o histogram) {
	h.n += o.n
	for i, c := range o.counts {
		h.counts[i] += c
	}
}

// quantile returns the q-quantile in milliseconds (0 when empty): the
// geometric middle of the bucket that holds it.
func (h *histogram) quantile(q float64) float64 {
	if h.n == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(h.n)))
	var seen int64
	for i, c := range h.counts {
		seen += c
		if seen >= max(rank, 1) {
			if i == 0 {
				return 0.001
			}
			return math.Exp((float64(i)-0.5)*histBase) / 1000
		}
	}
	return 0
}
