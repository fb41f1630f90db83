package admin

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	mem "github.com/boson-go/boson/backend-mem"
	"github.com/boson-go/boson/core"
)

// parkOn stores a job in queue "fanin", claims it and parks it on
// children (AwaitAll), returning its id.
func parkOn(t *testing.T, be core.QueueBackend, children ...string) string {
	t.Helper()
	ctx := context.Background()
	res, err := be.Enqueue(ctx, []core.EnqueueRequest{{Queue: "fanin", Task: "gather"}})
	if err != nil {
		t.Fatal(err)
	}
	js, err := be.Claim(ctx, core.ClaimRequest{Queue: "fanin", WorkerID: "w1", Limit: 1, LeaseTTL: time.Minute})
	if err != nil || len(js) != 1 || js[0].ID != res[0].Job.ID {
		t.Fatalf("claim: %v %d", err, len(js))
	}
	aw := be.(core.Awaiter)
	if _, err := aw.AwaitJobs(ctx, core.AwaitRequest{Lease: js[0].Lease, JobIDs: children, Mode: core.AwaitAll, CancelChildren: true}); err != nil {
		t.Fatal(err)
	}
	return js[0].ID
}

func TestJobWaitAPIAndPage(t *testing.T) {
	e := newEnv(t, Tokens([]string{readToken}, []string{adminToken}))
	parent := parkOn(t, e.be, e.ids.queued, e.ids.succeeded)

	var v waitView
	resp, body := e.do("GET", "/api/v1/jobs/"+parent+"/wait", readToken, nil, &v)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("wait: %d %s", resp.StatusCode, body)
	}
	if v.JobID != parent || len(v.JobIDs) != 2 || v.Mode != "all" || v.Pending != 1 || v.Woken || !v.Current || !v.CancelChildren {
		t.Errorf("wait %+v", v)
	}
	if want := "waiting on 1 of 2 jobs (all); cancelling the job cancels them"; v.Summary != want {
		t.Errorf("summary %q, want %q", v.Summary, want)
	}
	if resp, _ := e.do("GET", "/api/v1/jobs/"+e.ids.queued+"/wait", readToken, nil, nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("a job that never waited: %d", resp.StatusCode)
	}

	c := &http.Client{}
	req, _ := http.NewRequest("GET", e.srv.URL+"/jobs/"+parent, nil)
	req.Header.Set("Authorization", "Bearer "+readToken)
	r, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	raw, _ := io.ReadAll(r.Body)
	page := string(raw)
	if r.StatusCode != http.StatusOK || !strings.Contains(page, `id="wait"`) || !strings.Contains(page, "waiting on 1 of 2 jobs (all)") ||
		!strings.Contains(page, "jobs/"+e.ids.queued) {
		t.Errorf("job page %d lacks the wait:\n%s", r.StatusCode, page)
	}

	// The child that was pending ends: the wait is satisfied and the parent due.
	if _, err := e.be.Cancel(context.Background(), e.ids.queued, "stop"); err != nil {
		t.Fatal(err)
	}
	e.do("GET", "/api/v1/jobs/"+parent+"/wait", readToken, nil, &v)
	if v.Pending != 0 || !v.Woken || !strings.HasPrefix(v.Summary, "woken: 2 of 2 jobs ended") {
		t.Errorf("after the last child ended: %+v", v)
	}
}

// hidden hides the mem backend's Awaiter.
type hidden struct{ core.QueueBackend }

func TestJobWaitUnsupported(t *testing.T) {
	be := mem.New(mem.Options{})
	t.Cleanup(func() { _ = be.Close() })
	e := newEnv(t, NoAuth(), func(o *Options) { o.Backend = hidden{be} })
	res, err := be.Enqueue(context.Background(), []core.EnqueueRequest{{Queue: "q", Task: "t"}})
	if err != nil {
		t.Fatal(err)
	}
	if resp, body := e.do("GET", "/api/v1/jobs/"+res[0].Job.ID+"/wait", "", nil, nil); resp.StatusCode != http.StatusNotImplemented {
		t.Errorf("a store without core.Awaiter: %d %s", resp.StatusCode, body)
	}
}
