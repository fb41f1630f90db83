package sqliteq

import "github.com/boson-go/boson/backend-sql/internal/engine"

// opsBackend gives [Backend] the operations capabilities of the engine:
// core.RunReader (GetRun, ListAllRuns, CountRuns), core.JobSearcher
// (SearchJobs, CountSearch, FindByIdempotencyKey), core.TaskLister
// (ListTasks) and core.JobDeleter (DeleteJob, DeleteQueue), with the
// guarantees their doc comments in core state. The README of
// backend-sql says which filters an index serves and which ones filter
// the rows an index walk reads.
type opsBackend = engine.Ops

var _ engine.Ops = (*Backend)(nil)
