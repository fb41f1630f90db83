package cli

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape gets path with an optional bearer token and returns the status
// and the body.
func scrape(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// TestServeMetrics scrapes PREFIX/metrics: it needs a read (or admin)
// token, parses with the Prometheus text parser, and holds the store's
// queue depths and paused gauges; --metrics-public serves it without one.
func TestServeMetrics(t *testing.T) {
	db := "sqlite:" + t.TempDir() + "/serve.db"
	for range 2 {
		must(t, ExitOK, "enqueue", "--url", db, "--task", "t", "--queue", "web")
	}
	must(t, ExitOK, "enqueue", "--url", db, "--task", "t", "--queue", "mail")
	must(t, ExitOK, "pause", "--url", db, "mail")
	base, stop := serve(t, "--url", db, "--addr", "127.0.0.1:0", "--prefix", "/ops", "--read-token", "reader", "--admin-token", "boss")
	if code, _ := scrape(t, base+"metrics", ""); code != http.StatusUnauthorized {
		t.Errorf("without a token: %d, want 401", code)
	}
	if code, _ := scrape(t, base+"metrics", "wrong"); code != http.StatusUnauthorized {
		t.Errorf("with a wrong token: %d, want 401", code)
	}
	if code, _ := scrape(t, base+"metrics", "boss"); code != http.StatusOK {
		t.Errorf("with the admin token: %d, want 200", code)
	}
	code, body := scrape(t, base+"metrics", "reader")
	if code != http.StatusOK {
		t.Fatalf("with the read token: %d: %s", code, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("the Prometheus parser refuses the page: %v\n%s", err, body)
	}
	gauge := func(name string, labels map[string]string) float64 {
		t.Helper()
		mf := mfs[name]
		if mf == nil {
			t.Fatalf("no %s in\n%s", name, body)
		}
	next:
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if want, ok := labels[l.GetName()]; ok && want != l.GetValue() {
					continue next
				}
			}
			return m.GetGauge().GetValue()
		}
		t.Fatalf("no %s%v in\n%s", name, labels, body)
		return 0
	}
	if v := gauge("boson_queue_jobs", map[string]string{"queue": "web", "state": "queued"}); v != 2 {
		t.Errorf("web queued = %v, want 2", v)
	}
	if v := gauge("boson_queue_jobs", map[string]string{"queue": "mail", "state": "queued"}); v != 1 {
		t.Errorf("mail queued = %v, want 1", v)
	}
	if v := gauge("boson_queue_paused", map[string]string{"queue": "mail"}); v != 1 {
		t.Errorf("mail paused = %v, want 1", v)
	}
	if v := gauge("boson_queue_paused", map[string]string{"queue": "web"}); v != 0 {
		t.Errorf("web paused = %v, want 0", v)
	}
	if v := gauge("boson_queue_stats_up", nil); v != 1 {
		t.Errorf("stats_up = %v, want 1", v)
	}
	stop()

	base, stop = serve(t, "--url", db, "--addr", "127.0.0.1:0", "--read-token", "reader", "--metrics-public")
	if code, body := scrape(t, base+"metrics", ""); code != http.StatusOK || !strings.Contains(body, "boson_queue_jobs{") {
		t.Errorf("--metrics-public without a token: %d\n%s", code, body)
	}
	if code, _ := scrape(t, base+"api/v1/queues", ""); code != http.StatusUnauthorized {
		t.Errorf("--metrics-public opened the API: %d, want 401", code)
	}
	stop()

	// Without tokens on loopback, metrics are as open as the read-only
	// dashboard, under the same Host check.
	base, stop = serve(t, "--url", db, "--addr", "127.0.0.1:0")
	if code, _ := scrape(t, base+"metrics", ""); code != http.StatusOK {
		t.Errorf("loopback without tokens: %d, want 200", code)
	}
	req, _ := http.NewRequest("GET", base+"metrics", nil)
	req.Host = "attacker.example"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("rebound Host: %d, want 403", resp.StatusCode)
	}
	stop()
}
