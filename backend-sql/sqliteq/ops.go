package sqliteq

import (
	"context"

	"github.com/boson-go/boson/backend-sql/internal/engine"
	"github.com/boson-go/boson/core"
)

// opsBackend gives [Backend] the operations capabilities of the engine:
// core.RunReader (GetRun, ListAllRuns, CountRuns), core.JobSearcher
// (SearchJobs, CountSearch, FindByIdempotencyKey), core.TaskLister
// (ListTasks) and core.JobDeleter (DeleteJob, DeleteQueue), with the
// guarantees their doc comments in core state. The README of
// backend-sql says which filters an index serves and which ones filter
// the rows an index walk reads.
type opsBackend = engine.Ops

var _ engine.Ops = (*Backend)(nil)

// ExplainSearch returns the store's plan of the statement that reads the
// first page of SearchJobs(s), so that an operator can see which index a
// search walks (the README of backend-sql lists them). It runs nothing
// but EXPLAIN and changes nothing.
func (b *Backend) ExplainSearch(ctx context.Context, s core.JobSearch) (string, error) {
	return b.e.SearchPlan(ctx, s)
}
