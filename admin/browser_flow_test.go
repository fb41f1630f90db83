package admin

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserFlow opens a limited task's page in headless chromium,
// follows its busiest key to that key's jobs, and follows a job's sequence
// link to the sequence's jobs, which must be listed in the order they run.
func TestBrowserFlow(t *testing.T) {
	ctx := newBrowser(t)
	e := newEnv(t, NoAuth())
	f := seedFlow(t, e)
	srv := mounted(t, e.h)
	base := srv.URL + "/ops/admin/"

	err := chromedp.Do(ctx,
		chromedp.Navigate(base+"tasks"),
		chromedp.WaitVisible(css(`#tasks`)),
		chromedp.Click(css(`tr[data-task="tenant_task"] td a`)),
		chromedp.WaitVisible(css(`#flow`)),
	)
	if err != nil {
		t.Fatalf("tasks to task page: %v", err)
	}
	if run, acme := text(t, ctx, `#running`), text(t, ctx, `tr[data-key="acme"]`); !strings.HasPrefix(run, "4 of 10") || !strings.Contains(acme, "2 of 2") || !strings.Contains(acme, "at limit") {
		t.Fatalf("task page: running %q, acme %q", run, acme)
	}
	err = chromedp.Do(ctx,
		chromedp.Click(css(`tr[data-key="acme"] td a`)),
		chromedp.WaitVisible(css(`#jobs`)),
	)
	if err != nil {
		t.Fatalf("key to its jobs: %v", err)
	}
	for _, id := range f.acme {
		if !eval(t, ctx, `document.querySelector('tr[data-job="`+id+`"]') !== null`) {
			t.Fatalf("job %s of acme is not listed", id)
		}
	}
	if eval(t, ctx, `document.querySelector('tr[data-job="`+f.beta[0]+`"]') !== null`) {
		t.Fatal("a job of beta is listed among acme's")
	}

	err = chromedp.Do(ctx,
		chromedp.Navigate(base+"jobs/"+f.sequence[2]),
		chromedp.WaitVisible(css(`#sequence-key`)),
		chromedp.Click(css(`#sequence-key a`)),
		chromedp.WaitVisible(css(`#jobs`)),
	)
	if err != nil {
		t.Fatalf("job to its sequence: %v", err)
	}
	order, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('#jobs tbody tr')).map(r => r.dataset.job)`))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(order, ",") != strings.Join(f.sequence, ",") {
		t.Fatalf("sequence page lists %v, want %v in order", order, f.sequence)
	}
}
