package cli

import (
	"flag"
	"strings"
	"time"

	"github.com/boson-go/boson/cmd/internal/store"
	"github.com/boson-go/boson/core"
)

// searchFlags are the job filters shared by jobs and bulk.
type searchFlags struct {
	queue, task, states string
	header, idPrefix    string
	ids                 stringList
	created, finished   timeRangeFlags
	// limitKey and sequenceKey select by flow key (core.FlowController).
	limitKey, sequenceKey string
}

type timeRangeFlags struct{ from, to string }

func (f *searchFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.queue, "queue", "", "only jobs of this `queue`")
	fs.StringVar(&f.task, "task", "", "only jobs of this `task`")
	fs.StringVar(&f.states, "state", "", "only jobs in these `states` (comma-separated)")
	fs.StringVar(&f.header, "header", "", "only jobs with this header (`key` or key=value)")
	fs.StringVar(&f.idPrefix, "id-prefix", "", "only jobs whose id starts with this `prefix`")
	fs.Var(&f.ids, "ids", "only these job `ids` (comma-separated or repeated)")
	fs.StringVar(&f.created.from, "created-from", "", "only jobs created at or after this `time` (RFC 3339, or a duration ago such as 2h)")
	fs.StringVar(&f.created.to, "created-to", "", "only jobs created before this `time`")
	fs.StringVar(&f.finished.from, "finished-from", "", "only jobs finished at or after this `time`")
	fs.StringVar(&f.finished.to, "finished-to", "", "only jobs finished before this `time`")
	fs.StringVar(&f.limitKey, "limit-key", "", "only jobs with this limit `key` (a store with flow control)")
	fs.StringVar(&f.sequenceKey, "sequence-key", "", "only jobs with this sequence `key` (a store with flow control); with the default order, a sequence's jobs in the order they run")
}

// searching reports whether a flag beyond queue, task and state is set, so
// that the listing needs the store's search capability.
func (f *searchFlags) searching() bool {
	return f.header != "" || f.idPrefix != "" || len(f.ids) > 0 ||
		f.created != (timeRangeFlags{}) || f.finished != (timeRangeFlags{}) || f.flowKeys()
}

// flowKeys reports whether --limit-key or --sequence-key is set: only a
// store that enforces flow control honours them, so the search needs its
// core.FlowController (another store would ignore the key and match too
// many jobs).
func (f *searchFlags) flowKeys() bool { return f.limitKey != "" || f.sequenceKey != "" }

// needFlow checks that st honours the flow keys of the flags, if any.
func (f *searchFlags) needFlow(st *store.Store) error {
	if !f.flowKeys() {
		return nil
	}
	_, err := capability[core.FlowController](st, "flow control, which --limit-key and --sequence-key need")
	return err
}

// search turns the flags into a validated search; relative times count
// back from now.
func (f *searchFlags) search(now time.Time) (core.JobSearch, error) {
	s := core.JobSearch{JobFilter: core.JobFilter{Queue: f.queue, Task: f.task}, IDPrefix: f.idPrefix, IDs: f.ids,
		LimitKey: f.limitKey, SequenceKey: f.sequenceKey}
	if f.states != "" {
		for _, v := range strings.Split(f.states, ",") {
			st, err := core.ParseJobState(strings.TrimSpace(v))
			if err != nil {
				return s, err
			}
			s.States = append(s.States, st)
		}
	}
	if f.header != "" {
		s.HeaderKey, s.HeaderValue, _ = strings.Cut(f.header, "=")
		if s.HeaderKey == "" {
			return s, usagef("--header %q has no key", f.header)
		}
	}
	var err error
	if s.Created, err = f.created.parse("created", now); err != nil {
		return s, err
	}
	if s.Finished, err = f.finished.parse("finished", now); err != nil {
		return s, err
	}
	return s, core.ValidateJobSearch(s)
}

func (r timeRangeFlags) parse(name string, now time.Time) (core.TimeRange, error) {
	var out core.TimeRange
	var err error
	if out.From, err = parseWhen("--"+name+"-from", r.from, now); err != nil {
		return out, err
	}
	if out.To, err = parseWhen("--"+name+"-to", r.to, now); err != nil {
		return out, err
	}
	if !out.From.IsZero() && !out.To.IsZero() && !out.From.Before(out.To) {
		return out, usagef("--%s-from %s is not before --%s-to %s", name, r.from, name, r.to)
	}
	return out, nil
}

// parseWhen reads a time flag: RFC 3339, a date (midnight UTC), or a
// duration such as 90m meaning that long before now. Empty is zero.
func parseWhen(flagName, v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t.UTC(), nil
	}
	if t, err := time.Parse("2006-01-02", v); err == nil {
		return t.UTC(), nil
	}
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return now.Add(-d).UTC(), nil
	}
	return time.Time{}, usagef("%s %q is not an RFC 3339 time, a date or a duration ago such as 2h", flagName, v)
}

// matchesAll reports whether s selects every job.
func matchesAll(s core.JobSearch) bool {
	return s.Queue == "" && s.Task == "" && len(s.States) == 0 && s.HeaderKey == "" &&
		s.IDPrefix == "" && len(s.IDs) == 0 && s.Created.IsZero() && s.Finished.IsZero() &&
		s.LimitKey == "" && s.SequenceKey == ""
}
