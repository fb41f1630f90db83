package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boson-go/boson/cmd/internal/bench"
)

// smokeJobs is N of the smoke run.
var smokeJobs = map[bool]int{false: 300, true: 100}[raceEnabled]

// TestBenchSmoke runs a small benchmark on every store at hand and checks
// its self-check and the shape of its report (not its speed).
func TestBenchSmoke(t *testing.T) {
	urls := map[string]string{"mem": "mem:", "sqlite": "sqlite:" + filepath.Join(t.TempDir(), "bench.db")}
	for kind, env := range map[string]string{"postgres": "BOSON_TEST_POSTGRES_URL", "redis": "BOSON_TEST_REDIS_URL", "nats": "BOSON_TEST_NATS_URL"} {
		if u := os.Getenv(env); u != "" {
			urls[kind] = u
		}
	}
	for kind, url := range urls {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			svg, out := filepath.Join(dir, "chart.svg"), filepath.Join(dir, "report.json")
			// Small enough for CI under the race detector, which slows the
			// pure-Go SQLite driver down by an order of magnitude.
			scenarios := "ceiling,batch,mixed,roundtrip,idle"
			if raceEnabled && kind != "mem" {
				scenarios = "ceiling,batch,mixed,roundtrip"
			}
			r := must(t, ExitOK, "bench", url, "--quick", "-n", fmt.Sprint(smokeJobs), "--json", "--svg", svg, "--out", out,
				"--scenarios", scenarios, "--idle-duration", "1s", "--round-trips", "10",
				"--mixed-rate", "400", "--mixed-duration", "250ms", "--spawn-batch", "100")
			o := decode[benchOut](t, r)
			if len(o.Reports) != 1 || o.Reports[0].Kind != kind {
				t.Fatalf("reports: %+v", o.Reports)
			}
			rep := o.Reports[0]
			seen := map[string]bench.Result{}
			for _, res := range rep.Results {
				seen[res.Scenario] = res
				if len(res.Problems) > 0 {
					t.Errorf("%s: %v", res.Scenario, res.Problems)
				}
			}
			for _, s := range strings.Split(strings.Replace(scenarios, "batch", "batch-noop,batch-work", 1), ",") {
				if _, ok := seen[s]; !ok {
					t.Errorf("no %s result", s)
				}
			}
			if b := seen["batch-noop"]; b.Jobs != smokeJobs || b.SpawnPerSec <= 0 || b.DrainPerSec <= 0 || b.ToDone.N != smokeJobs || b.DrainOfCeiling <= 0 {
				t.Errorf("batch-noop: %+v", b)
			}
			if rt := seen["roundtrip"]; rt.ToDone.N != 10 || rt.ToDone.P50 <= 0 {
				t.Errorf("roundtrip: %+v", rt)
			}
			if len(rep.Verdicts) == 0 {
				t.Errorf("no verdicts")
			}
			b, err := os.ReadFile(svg)
			if err != nil || !strings.HasPrefix(string(b), "<svg") || !strings.Contains(string(b), kind) {
				t.Errorf("chart: %v %.80q", err, b)
			}
			// The saved report renders again without running.
			r = must(t, ExitOK, "bench", "--from", out)
			if !strings.Contains(r.stdout, "batch-noop") || !strings.Contains(r.stdout, "target") {
				t.Errorf("bench --from:\n%s", r.stdout)
			}
		})
	}
}

// TestBenchSoakSmoke runs a short soak on a private PostgreSQL server (with
// and without the held horizon) and on mem, and checks the report, the
// samples and the chart.
func TestBenchSoakSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL server")
	}
	dir := t.TempDir()
	svg := filepath.Join(dir, "soak.svg")
	r := must(t, ExitOK, "bench", "mem:", "--private-postgres", "--json", "--scenarios", "soak", "--soak-svg", svg,
		"--soak-rate", "200", "--soak-duration", "2s", "--soak-interval", "1s", "-w", "20")
	o := decode[benchOut](t, r)
	if len(o.Reports) != 2 {
		t.Fatalf("%d reports, want mem and postgres", len(o.Reports))
	}
	for _, rep := range o.Reports {
		want := map[string]int{"mem": 1, "postgres": 2}[rep.Kind]
		if len(rep.Soak) != want {
			t.Fatalf("%s: %d soak runs, want %d", rep.Kind, len(rep.Soak), want)
		}
		for _, run := range rep.Soak {
			if len(run.Problems) > 0 || run.Spawned != 400 || run.Done != 400 || len(run.Samples) < 2 {
				t.Errorf("%s: %+v", run.Title(), run)
			}
			if rep.Kind != "postgres" {
				continue
			}
			if run.Samples[0].Tables == nil || run.Samples[0].Tables.TableBytes == 0 {
				t.Errorf("%s: no table statistics", run.Title())
			}
			set := map[string]string{}
			for _, s := range run.Server {
				set[s.Name] = s.Value
			}
			if set["autovacuum"] != "on" {
				t.Errorf("%s: private server settings %v", run.Title(), set)
			}
			if run.Held && (run.Xmin == "" || run.Samples[len(run.Samples)-1].Tables.XminAge == 0) {
				t.Errorf("%s: no held horizon (xmin %q)", run.Title(), run.Xmin)
			}
		}
	}
	if b, err := os.ReadFile(svg); err != nil || !strings.Contains(string(b), "xmin held") {
		t.Errorf("soak chart: %v %.80q", err, b)
	}
	must(t, ExitUsage, "bench", "mem:", "--pg-set", "autovacuum=off")
}
