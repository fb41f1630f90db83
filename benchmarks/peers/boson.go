package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/boson-go/boson/cmd/soak"
)

// Boson runs the boson side through the built command, "boson bench", the
// instrument docs/benchmarks.md is made with, and reads its JSON report.
type Boson struct {
	Bin        string
	Workers    int
	SpawnBatch int
	Spawners   int
	Dir        string
	// Work is the working handler's sleep in the steady load.
	Work time.Duration
}

func (b *Boson) settings() []soak.Setting {
	return []soak.Setting{
		{Name: "tuned worker", Value: "Concurrency=" + strconv.Itoa(b.Workers)},
		{Name: "defaults worker", Value: "boson.WorkerOptions{} with only its queue set"},
		{Name: "spawn", Value: fmt.Sprintf("Client.SpawnRequests, %d jobs per call from %d goroutines", b.SpawnBatch, b.Spawners)},
		{Name: "drain ends", Value: "when the store acknowledged the last completion"},
	}
}

// benchReport is the part of boson bench's JSON report read here.
type benchReport struct {
	Reports []struct {
		Kind    string `json:"kind"`
		Results []struct {
			Scenario    string   `json:"scenario"`
			SpawnPerSec float64  `json:"spawn_per_sec"`
			DrainPerSec float64  `json:"drain_per_sec"`
			Problems    []string `json:"problems"`
		} `json:"results"`
		Soak []*soak.Run `json:"soak"`
	} `json:"reports"`
}

// bench runs boson bench with args on url and returns its report.
func (b *Boson) bench(ctx context.Context, url string, args ...string) (*benchReport, error) {
	out := filepath.Join(b.Dir, "boson-"+suffix()+".json")
	defer os.Remove(out)
	args = append(append([]string{"bench", "--no-progress", "--out", out, "--runs", "1", "-w", strconv.Itoa(b.Workers),
		"--spawn-batch", strconv.Itoa(b.SpawnBatch), "--spawners", strconv.Itoa(b.Spawners)}, args...), url)
	cmd := exec.CommandContext(ctx, b.Bin, args...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = nil, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("boson %s: %w: %s", strings.Join(args, " "), err, lastLines(stderr.String(), 5))
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		return nil, err
	}
	var rep benchReport
	if err := json.Unmarshal(raw, &rep); err != nil {
		return nil, fmt.Errorf("boson report: %w", err)
	}
	if len(rep.Reports) != 1 {
		return nil, fmt.Errorf("boson report: %d reports, want 1", len(rep.Reports))
	}
	return &rep, nil
}

// Batch runs boson's no-op batch with -w and with WorkerOptions{}.
func (b *Boson) Batch(ctx context.Context, url string, n int) (BatchFigures, error) {
	rep, err := b.bench(ctx, url, "--scenarios", "batch-noop", "--defaults", "-n", strconv.Itoa(n))
	if err != nil {
		return BatchFigures{}, err
	}
	var f BatchFigures
	for _, r := range rep.Reports[0].Results {
		if len(r.Problems) > 0 {
			return BatchFigures{}, fmt.Errorf("boson %s self-check: %s", r.Scenario, strings.Join(r.Problems, "; "))
		}
		switch r.Scenario {
		case "batch-noop":
			f.Spawn, f.Drain = r.SpawnPerSec, r.DrainPerSec
		case "batch-noop-defaults":
			f.DrainDefaults = r.DrainPerSec
		}
	}
	if f.Drain == 0 || f.DrainDefaults == 0 {
		return BatchFigures{}, fmt.Errorf("boson report lacks the no-op batch figures")
	}
	return f, nil
}

// Steady runs boson's soak with spec's load on url, without and (when
// hold) with the held horizon.
func (b *Boson) Steady(ctx context.Context, url string, spec soak.Spec, retention time.Duration, hold string) ([]*soak.Run, error) {
	rep, err := b.bench(ctx, url, "--scenarios", "soak", "--soak-rate", strconv.Itoa(spec.Rate),
		"--soak-duration", spec.Duration.String(), "--soak-interval", spec.Interval.String(),
		"--soak-batch", strconv.Itoa(spec.Batch), "--soak-spawners", strconv.Itoa(spec.Spawners),
		"--soak-retention", retention.String(), "--soak-hold", hold, "--stall-timeout", spec.Stall.String(), "--work", b.Work.String())
	if err != nil {
		return nil, err
	}
	runs := rep.Reports[0].Soak
	if len(runs) == 0 {
		return nil, fmt.Errorf("boson report holds no soak")
	}
	return runs, nil
}

// buildBoson builds the command into dir and returns its path.
func buildBoson(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "boson")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/boson-go/boson/cmd/boson")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build boson: %w: %s", err, lastLines(string(out), 5))
	}
	return bin, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
