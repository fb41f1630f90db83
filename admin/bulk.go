package admin

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/boson-go/boson/core"
)

// DefaultBulkStep is the number of jobs one step of a bulk action visits
// when the request names none.
const DefaultBulkStep = 500

// bulkBudget bounds the time one bulk or queue-deletion request works
// before it answers with a cursor to continue from.
var bulkBudget = 5 * time.Second

// bulkPreview counts the jobs req would change on every backend it reads.
func (s stores) bulkPreview(ctx context.Context, req core.BulkRequest) (core.BulkResult, error) {
	bs, err := s.backendsFor(req.Search.Queue)
	if err == nil {
		err = checkFlowSearch(bs, req.Search)
	}
	if err != nil {
		return core.BulkResult{}, err
	}
	req.DryRun, req.Cursor = true, ""
	out := core.BulkResult{Counts: map[core.JobState]int64{}, Done: true}
	for _, b := range bs {
		res, err := core.Bulk(ctx, b, req)
		if err != nil {
			return core.BulkResult{}, err
		}
		out.Matched += res.Matched
		for k, v := range res.Counts {
			out.Counts[k] += v
		}
	}
	return out, nil
}

// bulkRun runs steps of req until every match was visited, max jobs were
// visited or the budget is spent (after one step at least). With several backends the cursor names
// the backend it continues on as "<index>~<cursor>".
func (s stores) bulkRun(ctx context.Context, req core.BulkRequest, max int64, budget time.Duration) (core.BulkResult, error) {
	bs, err := s.backendsFor(req.Search.Queue)
	if err == nil {
		err = checkFlowSearch(bs, req.Search)
	}
	if err != nil {
		return core.BulkResult{}, err
	}
	at := 0
	if len(bs) > 1 && req.Cursor != "" {
		i, c, ok := strings.Cut(req.Cursor, "~")
		n, perr := strconv.Atoi(i)
		if !ok || perr != nil || n < 0 || n >= len(bs) {
			return core.BulkResult{}, invalidf("cursor", "is not a cursor this server gave")
		}
		at, req.Cursor = n, c
	}
	var out core.BulkResult
	deadline := time.Now().Add(budget)
	limit := req.Limit
	for first := true; at < len(bs); first = false {
		req.Limit = int(min(int64(limit), max-out.Matched))
		if req.Limit <= 0 || !first && time.Now().After(deadline) {
			break
		}
		res, err := core.Bulk(ctx, bs[at], req)
		out.Matched += res.Matched
		out.Changed += res.Changed
		out.Skipped += res.Skipped
		out.Failed += res.Failed
		out.Errors = append(out.Errors, res.Errors...)
		req.Cursor = res.Next
		if err != nil {
			out.Next = s.bulkCursor(len(bs), at, req.Cursor)
			return out, err
		}
		if res.Done {
			at, req.Cursor = at+1, ""
		}
	}
	if len(out.Errors) > core.MaxBulkErrors {
		out.Errors = out.Errors[:core.MaxBulkErrors]
	}
	if at >= len(bs) {
		out.Done = true
		return out, nil
	}
	out.Next = s.bulkCursor(len(bs), at, req.Cursor)
	if out.Next == "" {
		out.Next = s.bulkCursor(len(bs), at, "")
	}
	return out, nil
}

func (s stores) bulkCursor(n, at int, c string) string {
	if n == 1 {
		return c
	}
	return fmt.Sprintf("%d~%s", at, c)
}

// bulkView is the API answer of a bulk preview or step.
type bulkView struct {
	Action   core.BulkAction         `json:"action"`
	DryRun   bool                    `json:"dry_run"`
	Matched  int64                   `json:"matched"`
	Counts   map[core.JobState]int64 `json:"counts,omitempty"`
	MatchAll bool                    `json:"match_all"`
	Changed  int                     `json:"changed"`
	Skipped  int                     `json:"skipped"`
	Failed   int                     `json:"failed"`
	Errors   []core.BulkError        `json:"errors,omitempty"`
	Cursor   string                  `json:"cursor,omitempty"`
	Done     bool                    `json:"done"`
}

func toBulkView(req core.BulkRequest, res core.BulkResult, dry bool) bulkView {
	return bulkView{Action: req.Action, DryRun: dry, Matched: res.Matched, Counts: res.Counts, MatchAll: matchesAll(req.Search),
		Changed: res.Changed, Skipped: res.Skipped, Failed: res.Failed, Errors: res.Errors, Cursor: res.Next, Done: res.Done}
}

func bulkAction(p params) (string, error) {
	a := p.get("action")
	switch core.BulkAction(a) {
	case core.BulkCancel, core.BulkRetry, core.BulkDelete:
		return a, nil
	}
	return "", errorf(http.StatusNotFound, "not_found", "no bulk action "+strconvQuote(a)+"; want cancel, retry or delete")
}

func strconvQuote(s string) string { return strconv.Quote(shorten(s, 64)) }

// bulk previews or confirms a bulk action from a JSON body.
func (h *Handler) bulk(r *http.Request, action string, body []byte, preview bool) (bulkView, error) {
	req, b, err := parseBulk(body, action)
	if err != nil {
		return bulkView{}, err
	}
	if preview {
		return h.bulkPreview(r, req)
	}
	return h.bulkConfirm(r, req, b.ConfirmCount, b.ConfirmAll)
}

// bulkPreview counts what req would change.
func (h *Handler) bulkPreview(r *http.Request, req core.BulkRequest) (bulkView, error) {
	pre, err := h.st.bulkPreview(r.Context(), req)
	return toBulkView(req, pre, true), err
}

// bulkConfirm applies req. It must carry the previewed count (and
// confirmAll for a filter that matches every job); it is refused with 409
// when the filter now matches more jobs than were confirmed, and it visits
// at most that many.
func (h *Handler) bulkConfirm(r *http.Request, req core.BulkRequest, confirmCount *int64, confirmAll bool) (bulkView, error) {
	if confirmCount == nil {
		return bulkView{}, invalidf("confirm_count", "is required: preview the action first and confirm with the count it showed")
	}
	if matchesAll(req.Search) && !confirmAll {
		return bulkView{}, invalidf("confirm_all", "the filter matches every job; set confirm_all to act on all of them")
	}
	pre, err := h.st.bulkPreview(r.Context(), req)
	if err != nil {
		return bulkView{}, err
	}
	if pre.Matched > *confirmCount {
		return bulkView{}, errorf(http.StatusConflict, "count_changed", fmt.Sprintf("the filter now matches %d jobs, more than the %d confirmed; preview again", pre.Matched, *confirmCount))
	}
	if pre.Matched == 0 {
		return toBulkView(req, core.BulkResult{Done: true}, false), nil
	}
	res, err := h.st.bulkRun(r.Context(), req, *confirmCount, bulkBudget)
	if err == nil {
		h.log.InfoContext(r.Context(), "admin: bulk action", "action", req.Action, "changed", res.Changed, "skipped", res.Skipped, "failed", res.Failed, "done", res.Done)
	}
	return toBulkView(req, res, false), err
}
