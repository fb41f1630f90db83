package admin

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/boson-go/boson/core"
)

// seedHistory completes, fails and retries jobs of queue "act" over three
// minutes of the env's clock and returns the per-minute counts it made,
// keyed by "15:04".
func seedHistory(t *testing.T, e *env) map[string][3]int64 {
	t.Helper()
	ctx := context.Background()
	start := e.clock.Now().Truncate(time.Minute).Add(time.Minute)
	want := map[string][3]int64{}
	plan := [][3]int{{4, 1, 2}, {0, 2, 0}, {6, 0, 1}} // completed, failed, retried
	for i, p := range plan {
		e.clock.Set(start.Add(time.Duration(i)*time.Minute + time.Second))
		n := p[0] + p[1] + p[2]
		reqs := make([]core.EnqueueRequest, n)
		for k := range reqs {
			reqs[k] = core.EnqueueRequest{Queue: "act", Task: "act_task", MaxAttempts: 5}
		}
		if _, err := e.be.Enqueue(ctx, reqs); err != nil {
			t.Fatal(err)
		}
		js, err := e.be.Claim(ctx, core.ClaimRequest{Queue: "act", WorkerID: "w-chart", Limit: n, LeaseTTL: time.Hour})
		if err != nil || len(js) != n {
			t.Fatalf("claim %d: %d %v", n, len(js), err)
		}
		for k, j := range js {
			var err error
			switch {
			case k < p[0]:
				_, err = e.be.Complete(ctx, []core.Completion{{Lease: j.Lease}})
			case k < p[0]+p[1]:
				_, err = e.be.Fail(ctx, core.Failure{Lease: j.Lease, Error: "bad input", Terminal: true})
			default:
				_, err = e.be.Fail(ctx, core.Failure{Lease: j.Lease, Error: "flaky", RetryAt: e.clock.Now().Add(time.Hour)})
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		want[start.Add(time.Duration(i)*time.Minute).Format("15:04")] = [3]int64{int64(p[0]), int64(p[1]), int64(p[2])}
	}
	e.clock.Set(start.Add(3*time.Minute + 30*time.Second))
	return want
}

func TestBrowserChartMatchesTheStore(t *testing.T) {
	ctx := newBrowser(t)
	e := newEnv(t, NoAuth())
	want := seedHistory(t, e)
	srv := mounted(t, e.h)
	// The queue page shows the chart as an image of its own.
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/ops/admin/queues/act"), chromedp.WaitVisible(css(`#activity-chart`))); err != nil {
		t.Fatal(err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := chromedp.Run(waitCtx, chromedp.Poll[bool](`(() => { const i = document.querySelector("#activity-chart"); return i.complete && i.naturalWidth === 640; })()`)); err != nil {
		t.Fatalf("the chart image did not load: %v", err)
	}
	// Its document holds the bars with their counts.
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/ops/admin/queues/act/activity.svg"), chromedp.WaitReady(css(`#bars`))); err != nil {
		t.Fatal(err)
	}
	bars, err := chromedp.Run(ctx, chromedp.Evaluate[[]map[string]string](`Array.from(document.querySelectorAll("#bars g.bar")).map(g => ({
		minute: g.dataset.minute, completed: g.dataset.completed, failed: g.dataset.failed, retried: g.dataset.retried,
		drawn: String(Array.from(g.querySelectorAll("rect")).reduce((s, r) => s + r.getBBox().height, 0) > 0)}))`))
	if err != nil {
		t.Fatal(err)
	}
	if len(bars) != activityMinutes {
		t.Fatalf("%d bars, want %d", len(bars), activityMinutes)
	}
	seen := 0
	for _, b := range bars {
		w, ok := want[b["minute"]]
		got := fmt.Sprintf("%s/%s/%s", b["completed"], b["failed"], b["retried"])
		if !ok {
			if got != "0/0/0" || b["drawn"] == "true" {
				t.Errorf("minute %s: %s drawn=%s, want nothing", b["minute"], got, b["drawn"])
			}
			continue
		}
		seen++
		if exp := fmt.Sprintf("%d/%d/%d", w[0], w[1], w[2]); got != exp || b["drawn"] != "true" {
			t.Errorf("minute %s: %s drawn=%s, want %s", b["minute"], got, b["drawn"], exp)
		}
	}
	if seen != len(want) {
		t.Fatalf("the chart shows %d of the %d seeded minutes", seen, len(want))
	}
	// The chart agrees with the store's own counts, minute by minute.
	for _, b := range bars {
		if _, ok := want[b["minute"]]; !ok {
			continue
		}
		from, _ := time.Parse("2006-01-02 15:04", e.clock.Now().Format("2006-01-02 ")+b["minute"])
		c, err := e.be.CountSearch(context.Background(), core.JobSearch{JobFilter: core.JobFilter{Queue: "act"}, Finished: core.TimeRange{From: from, To: from.Add(time.Minute)}})
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(c[core.StateSucceeded]) != b["completed"] || fmt.Sprint(c[core.StateFailed]) != b["failed"] {
			t.Errorf("minute %s: chart %s/%s, store %d/%d", b["minute"], b["completed"], b["failed"], c[core.StateSucceeded], c[core.StateFailed])
		}
	}
	// The three flaky jobs wait an hour: the depth ends at 3.
	depth, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#depth circle")).map(c => c.dataset.jobs)`))
	if err != nil || len(depth) != 13 || depth[0] != "0" || depth[len(depth)-1] != "3" {
		t.Errorf("depth samples %v %v", depth, err)
	}
}

func TestBrowserBulkRetryFromFailedView(t *testing.T) {
	ctx := newBrowser(t)
	e := newEnv(t, NoAuth())
	smtp := failMany(t, e, "mail", "smtp: 421 try later", 7)
	dns := failMany(t, e, "mail", "dns: no such host", 3)
	srv := mounted(t, e.h)
	base := srv.URL + "/ops/admin/"
	err := chromedp.Do(ctx,
		chromedp.Navigate(base+"failed"),
		chromedp.WaitVisible(css(`#failed`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	// Groups: the 7, the 3, and the fixture's one failed job.
	if c, msg := text(t, ctx, `tr[data-group="0"] td.count`), text(t, ctx, `tr[data-group="0"] td.err`); c != "7" || msg != "smtp: 421 try later" {
		t.Fatalf("first group: %s %q", c, msg)
	}
	err = chromedp.Do(ctx,
		chromedp.Click(css(`tr[data-group="0"] button.retry`)),
		chromedp.WaitVisible(css(`#confirm`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	if n := text(t, ctx, `#confirm`); n != "Retry 7 jobs" {
		t.Fatalf("confirm button %q", n)
	}
	if got := e.states("mail"); got[core.StateFailed] != 11 {
		t.Fatalf("the confirmation page changed jobs: %v", got)
	}
	if err := chromedp.Do(ctx, chromedp.Click(css(`#confirm`)), chromedp.WaitVisible(css(`#retried`))); err != nil {
		t.Fatal(err)
	}
	if msg := text(t, ctx, `#retried`); msg != "Queued 7 jobs again." {
		t.Fatalf("notice %q", msg)
	}
	for _, id := range smtp {
		if j, _ := e.be.GetJob(context.Background(), id); j.State != core.StateQueued {
			t.Errorf("retried job %s is %s", id, j.State)
		}
	}
	for _, id := range append(dns, e.ids.failed) {
		if j, _ := e.be.GetJob(context.Background(), id); j.State != core.StateFailed {
			t.Errorf("job %s of another group is %s", id, j.State)
		}
	}
}

func TestBrowserEnqueueForm(t *testing.T) {
	ctx := newBrowser(t)
	e := newEnv(t, NoAuth())
	srv := mounted(t, e.h)
	before := e.states("forms")
	err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/ops/admin/enqueue?queue=forms"),
		chromedp.WaitVisible(css(`#enqueue`)),
		chromedp.SendKeys(css(`input[name="task"]`), "resize"),
		chromedp.SetValue(css(`textarea[name="payload"]`), `{"width": 640,`),
		chromedp.SetValue(css(`textarea[name="headers"]`), "tenant=acme"),
		chromedp.Click(css(`#submit`)),
		chromedp.WaitVisible(css(`#message`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	if msg := text(t, ctx, `#message`); !strings.Contains(msg, "payload") || !strings.Contains(msg, "not valid JSON") {
		t.Fatalf("bad JSON message %q", msg)
	}
	if got := e.states("forms"); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatalf("bad JSON stored a job: %v", got)
	}
	if kept, err := chromedp.Run(ctx, chromedp.Value(css(`input[name="task"]`))); err != nil || kept != "resize" {
		t.Fatalf("the form lost its fields: %q %v", kept, err)
	}
	err = chromedp.Do(ctx,
		chromedp.SetValue(css(`textarea[name="payload"]`), `{"width": 640}`),
		chromedp.SendKeys(css(`input[name="limit_key"]`), "acme"),
		chromedp.SendKeys(css(`input[name="sequence_key"]`), "album-7"),
		chromedp.Click(css(`#submit`)),
		chromedp.WaitVisible(css(`#payload`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	page, err := e.be.ListJobs(context.Background(), core.JobFilter{Queue: "forms"})
	if err != nil || len(page.Jobs) != 1 {
		t.Fatalf("stored jobs: %+v %v", page, err)
	}
	j := page.Jobs[0]
	if j.Task != "resize" || string(j.Payload) != `{"width":640}` || j.Headers["tenant"] != "acme" || text(t, ctx, `#state`) != "queued" ||
		j.LimitKey != "acme" || j.SequenceKey != "album-7" {
		t.Fatalf("stored job %+v", j)
	}
	if lk, sk := text(t, ctx, `#limit-key`), text(t, ctx, `#sequence-key`); lk != "acme" || !strings.HasPrefix(sk, "album-7") {
		t.Fatalf("job page keys: limit %q, sequence %q", lk, sk)
	}
}

func TestBrowserLiveCounts(t *testing.T) {
	ctx := newBrowser(t)
	e := newEnv(t, NoAuth())
	var live atomic.Int64
	mux := http.NewServeMux()
	inner := http.StripPrefix("/ops/admin", e.h)
	mux.Handle("/ops/admin/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/live/counts") {
			live.Add(1)
		}
		inner.ServeHTTP(w, r)
	}))
	srv := newTestServer(t, mux)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/ops/admin/queues/mail"), chromedp.WaitVisible(css(`#counts`))); err != nil {
		t.Fatal(err)
	}
	if n := text(t, ctx, `[data-count="mail/queued"]`); n != "2" {
		t.Fatalf("queued before: %s", n)
	}
	opened := time.Now()
	reqs := make([]core.EnqueueRequest, 5)
	for i := range reqs {
		reqs[i] = core.EnqueueRequest{Queue: "mail", Task: "send_email"}
	}
	if _, err := e.be.Enqueue(context.Background(), reqs); err != nil {
		t.Fatal(err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if _, err := chromedp.Run(waitCtx, chromedp.Poll[bool](`document.querySelector('[data-count="mail/queued"]').textContent === "7"`)); err != nil {
		t.Fatalf("the count did not update without a reload: %v", err)
	}
	// Keep the page open a little longer and count its requests.
	time.Sleep(3 * time.Second)
	elapsed, n := time.Since(opened), live.Load()
	if n < 1 || float64(n) > elapsed.Seconds()/2+1 {
		t.Fatalf("%d live requests in %s: more than one per 2 s", n, elapsed)
	}
	if st := text(t, ctx, `#live-status`); !strings.HasPrefix(st, "live") {
		t.Fatalf("live status %q", st)
	}
}

// TestBrowserNarrowAndWide renders the main pages at 1280 and 390 px: no
// page is wider than the window (wide tables scroll inside their box).
// With BOSON_UPDATE_SCREENSHOTS=1 it writes the screenshots shown in the
// README to docs/.
func TestBrowserNarrowAndWide(t *testing.T) {
	ctx := newBrowser(t)
	e := newEnv(t, NoAuth())
	seedHistory(t, e)
	failMany(t, e, "act", "upstream: 503 service unavailable", 4)
	seedFlow(t, e)
	e.expect("PUT", "/api/v1/queues/work/config", "", map[string]any{"max_running": 4}, 200, "")
	srv := mounted(t, e.h)
	dir := t.TempDir()
	if os.Getenv("BOSON_UPDATE_SCREENSHOTS") == "1" {
		dir = filepath.Join("..", "docs")
	}
	for _, width := range []int64{1280, 390} {
		for _, page := range []struct{ name, path, wait string }{
			{"queue", "queues/act", "#activity"},
			{"queues", "", "#queues"},
			{"failed", "failed", "#failed"},
			{"job", "jobs/" + e.ids.failed, "#timeline"},
			{"enqueue", "enqueue", "#enqueue"},
			{"runs", "runs", "#runs"},
			{"jobs", "jobs", "#jobs"},
			{"jobs-search", "jobs?ids=" + e.ids.failed + ",+" + e.ids.queued + "&created_from=2026-01-01T00:00:00Z&created_to=2027-01-01T00:00:00.123456789%2B02:00&finished_from=2026-01-01T00:00:00Z", "#jobs"},
			{"tasks", "tasks", "#tasks"},
			{"task", "tasks/tenant_task", "#keys"},
			{"queue-limited", "queues/work", "#queue-limit"},
		} {
			vp := chromedp.EmulateViewport(width, 900)
			if width < 600 {
				vp = chromedp.EmulateViewport(width, 900, chromedp.EmulateMobile, chromedp.EmulateTouch)
			}
			err := chromedp.Do(ctx,
				vp,
				chromedp.Navigate(srv.URL+"/ops/admin/"+page.path),
				chromedp.WaitVisible(css(page.wait)),
			)
			if err != nil {
				t.Fatalf("%s at %d: %v", page.name, width, err)
			}
			overflow := eval(t, ctx, `document.documentElement.scrollWidth > window.innerWidth`)
			if overflow {
				t.Errorf("%s at %d px: the page is wider than the window", page.name, width)
			}
			if page.name == "queue" || page.name == "failed" {
				shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("admin-%s-%d.png", page.name, width)), shot, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}
