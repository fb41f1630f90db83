package admin

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/boson-go/boson/conformance/testenv/testreq"
	"github.com/boson-go/boson/core"
)

// chromiumPath finds Debian's chromium, or skips the test (fails it when
// BOSON_TEST_REQUIRE requires chromium, as "all" does).
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	testreq.Unavailable(t, testreq.Chromium, "chromium not found (apt-get install -y chromium)")
	return ""
}

// newBrowser starts headless chromium and returns a context that drives it.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath(t)
	dir, err := os.MkdirTemp("", "boson-admin-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(dir),
	}
	ctx, cancelTimeout := context.WithTimeout(context.Background(), 60*time.Second)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelBrowser()
		cancelAlloc()
		cancelTimeout()
		_ = os.RemoveAll(dir)
	})
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return bctx
}

// text returns the visible text of the first element matching css.
func text(t *testing.T, ctx context.Context, css string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(css)))
	if err != nil {
		t.Fatalf("text of %s: %v", css, err)
	}
	return strings.TrimSpace(s)
}

// eval evaluates a boolean JavaScript expression in the page.
type css = chromedp.CSS

func eval(t *testing.T, ctx context.Context, expr string) bool {
	t.Helper()
	b, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return b
}

// TestBrowserCancel logs in through the dashboard in real headless
// chromium, opens a queued job from the job list, cancels it with the
// button and checks the page and the backend afterwards.
func TestBrowserCancel(t *testing.T) {
	ctx := newBrowser(t)
	e := newEnv(t, Tokens([]string{readToken}, []string{adminToken}))
	srv := mounted(t, e.h)
	base := srv.URL + "/ops/admin/"
	id := e.ids.queued

	err := chromedp.Do(ctx,
		chromedp.Navigate(base),
		chromedp.WaitVisible(css(`input[name="token"]`)),
		chromedp.SendKeys(css(`input[name="token"]`), adminToken),
		chromedp.Click(css(`form.login button`)),
		chromedp.WaitVisible(css(`#queues`)),
	)
	if err != nil {
		t.Fatalf("login: %v", err)
	}
	if st, row := text(t, ctx, `tr[data-queue="mail"] td.status`), text(t, ctx, `tr[data-queue="mail"]`); st != "active" || !strings.Contains(row, "Pause") {
		t.Fatalf("queues page: status %q, row %q", st, row)
	}

	err = chromedp.Do(ctx,
		chromedp.Click(css(`tr[data-queue="mail"] td a`)),
		chromedp.WaitVisible(css(`#counts`)),
		chromedp.Click(css(`p.links a`)),
		chromedp.WaitVisible(css(`#jobs`)),
		chromedp.Click(css(`tr[data-job="`+id+`"] a`)),
		chromedp.WaitVisible(css(`#cancel`)),
	)
	if err != nil {
		t.Fatalf("job list to job page: %v", err)
	}
	title, err := chromedp.Run(ctx, chromedp.Title())
	if err != nil {
		t.Fatal(err)
	}
	if st, perm := text(t, ctx, `#state`), text(t, ctx, `#perm`); !strings.Contains(title, id) || st != "queued" || perm != "admin" {
		t.Fatalf("job page before cancel: title %q, state %q, perm %q", title, st, perm)
	}
	if err := chromedp.Do(ctx, chromedp.Click(css(`#cancel`)), chromedp.WaitVisible(css(`#retry`))); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	st, lastErr := text(t, ctx, `#state`), text(t, ctx, `#last-error`)
	cancelGone := eval(t, ctx, `document.querySelector("#cancel") === null`)
	if st != "cancelled" || lastErr != "cancelled by an operator" || !cancelGone {
		t.Fatalf("job page after cancel: state %q, error %q, cancel button gone %v", st, lastErr, cancelGone)
	}
	j, err := e.be.GetJob(context.Background(), id)
	if err != nil || j.State != core.StateCancelled || j.LastError != "cancelled by an operator" {
		t.Fatalf("backend after cancel: %+v %v", j, err)
	}

	// The job list shows the new state, and the hostile payload stays text.
	err = chromedp.Do(ctx,
		chromedp.Navigate(base+"jobs?queue=mail&state=cancelled"),
		chromedp.WaitVisible(css(`#jobs`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	if st := text(t, ctx, `tr[data-job="`+id+`"] .badge`); st != "cancelled" {
		t.Fatalf("job list after cancel: %q", st)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"jobs/"+e.ids.hostile), chromedp.WaitVisible(css(`#payload`))); err != nil {
		t.Fatal(err)
	}
	if eval(t, ctx, `document.querySelectorAll("main script, main img").length > 0`) || !strings.Contains(text(t, ctx, `#payload`), "<script>") {
		t.Fatal("the hostile payload was rendered as markup")
	}
}
