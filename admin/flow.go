package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/boson-go/boson/core"
)

// Flow control (limits and start rates at claim, sequences, limit keys) is
// enforced by a store that implements core.FlowController. The handler
// reads running jobs against the limits through it, searches by limit and
// sequence key only on it (another store would ignore the key and answer
// with too many jobs), and refuses to store a flow limit or enqueue a job
// with flow fields where a backend lacks it: such a limit would not hold.

// flowKeys reports whether s selects by a limit or sequence key.
func flowKeys(s core.JobSearch) bool { return s.LimitKey != "" || s.SequenceKey != "" }

// hasSearch reports whether s needs the search capability: a search field
// of core, or a flow key.
func hasSearch(s core.JobSearch) bool { return s.HasSearchFields() || flowKeys(s) }

// flowControllers returns bs as flow controllers, or an error wrapping
// core.ErrUnsupported naming what needed them.
func flowControllers(bs []core.QueueBackend, what string) ([]core.FlowController, error) {
	return capable[core.FlowController](bs, "flow control ("+what+")")
}

// checkFlowSearch refuses a search by flow key over backends that do not
// honour it.
func checkFlowSearch(bs []core.QueueBackend, q core.JobSearch) error {
	if !flowKeys(q) {
		return nil
	}
	_, err := flowControllers(bs, "search by limit_key or sequence_key")
	return err
}

// runningByKey merges the busiest limit keys of task over every backend:
// counts of one key add up, most running first (ties by key), at most
// limit keys. Behind a router each backend is asked for its busiest
// core.MaxPageSize keys, so that a key busy on the sum but not on any one
// store is still counted; the merge is exact while no store runs jobs of
// more keys than that.
func (s stores) runningByKey(ctx context.Context, task string, limit int) ([]core.KeyCount, error) {
	fcs, err := flowControllers(s.all(), "running jobs by limit key")
	if err != nil {
		return nil, err
	}
	if len(fcs) == 1 {
		return fcs[0].RunningByKey(ctx, task, limit)
	}
	sum := map[string]int64{}
	for _, fc := range fcs {
		ks, err := fc.RunningByKey(ctx, task, core.MaxPageSize)
		if err != nil {
			return nil, err
		}
		for _, k := range ks {
			sum[k.Key] += k.Running
		}
	}
	out := make([]core.KeyCount, 0, len(sum))
	for k, n := range sum {
		out = append(out, core.KeyCount{Key: k, Running: n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Running != out[j].Running {
			return out[i].Running > out[j].Running
		}
		return out[i].Key < out[j].Key
	})
	if limit == 0 {
		limit = core.DefaultPageSize
	}
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// running counts the running jobs that f selects (f's States are replaced).
func (s stores) running(ctx context.Context, f core.JobFilter) (int64, error) {
	f.States = []core.JobState{core.StateRunning}
	c, err := s.countJobs(ctx, f)
	return c[core.StateRunning], err
}

// atLimit reports whether running has reached a limit (0: no limit).
func atLimit(running int64, limit int) bool { return limit > 0 && running >= int64(limit) }

// keyView is one limit key with its running jobs.
type keyView struct {
	Key     string `json:"key"`
	Running int64  `json:"running"`
	// AtLimit reports that the key has reached MaxRunningPerKey.
	AtLimit bool `json:"at_limit"`
}

// taskFlowView is a task's running jobs against its flow limits.
type taskFlowView struct {
	Task                     string `json:"task"`
	Running                  int64  `json:"running"`
	AtLimit                  bool   `json:"at_limit"`
	MaxRunning               int    `json:"max_running"`
	MaxRunningPerKey         int    `json:"max_running_per_key"`
	MaxStartsPerSecond       int    `json:"max_starts_per_second"`
	MaxStartsPerSecondPerKey int    `json:"max_starts_per_second_per_key"`
	HoldSequenceOnFailure    bool   `json:"hold_sequence_on_failure"`
	// Keys are the busiest limit keys, most running first.
	Keys []keyView `json:"keys"`
}

// Limited reports whether the task has a concurrency or rate limit.
func (v taskFlowView) Limited() bool {
	return v.MaxRunning > 0 || v.MaxRunningPerKey > 0 || v.MaxStartsPerSecond > 0 || v.MaxStartsPerSecondPerKey > 0
}

// taskFlow reads task's running jobs, its stored limits and its busiest
// keys (at most keys of them).
func (h *Handler) taskFlow(ctx context.Context, task string, keys int) (taskFlowView, error) {
	if err := core.ValidateRunningByKey(task, keys); err != nil {
		return taskFlowView{}, err
	}
	if _, err := flowControllers(h.st.all(), "running jobs against limits"); err != nil {
		return taskFlowView{}, err
	}
	cfg, err := h.st.getTaskConfig(ctx, task)
	if err != nil && !errors.Is(err, core.ErrNotFound) {
		return taskFlowView{}, err
	}
	v := taskFlowView{Task: task, MaxRunning: cfg.MaxRunning, MaxRunningPerKey: cfg.MaxRunningPerKey,
		MaxStartsPerSecond: cfg.MaxStartsPerSecond, MaxStartsPerSecondPerKey: cfg.MaxStartsPerSecondPerKey,
		HoldSequenceOnFailure: cfg.HoldSequenceOnFailure, Keys: []keyView{}}
	if v.Running, err = h.st.running(ctx, core.JobFilter{Task: task}); err != nil {
		return taskFlowView{}, err
	}
	v.AtLimit = atLimit(v.Running, v.MaxRunning)
	ks, err := h.st.runningByKey(ctx, task, keys)
	if err != nil {
		return taskFlowView{}, err
	}
	for _, k := range ks {
		v.Keys = append(v.Keys, keyView{Key: k.Key, Running: k.Running, AtLimit: atLimit(k.Running, v.MaxRunningPerKey)})
	}
	return v, nil
}

// queueConfigBody is the JSON body of PUT /api/v1/queues/{queue}/config.
// It replaces the stored settings; Paused, when omitted, keeps its stored
// value (pause and resume are actions of their own).
type queueConfigBody struct {
	Queue        string    `json:"queue"`
	Paused       *bool     `json:"paused"`
	RetentionTTL *duration `json:"retention_ttl"`
	CleanupLimit int       `json:"cleanup_limit"`
	MaxRunning   int       `json:"max_running"`
}

// parseQueueConfig turns a body into a validated config for queue over
// the stored one (for Paused).
func parseQueueConfig(data []byte, queue string, stored core.QueueConfig) (core.QueueConfig, error) {
	var b queueConfigBody
	if err := decodeStrict(data, &b); err != nil {
		return core.QueueConfig{}, err
	}
	if b.Queue != "" && b.Queue != queue {
		return core.QueueConfig{}, invalidf("queue", "%q differs from the queue %q in the path", shorten(b.Queue, 64), queue)
	}
	c := core.QueueConfig{Queue: queue, Paused: stored.Paused, CleanupLimit: b.CleanupLimit, MaxRunning: b.MaxRunning}
	if b.Paused != nil {
		c.Paused = *b.Paused
	}
	if b.RetentionTTL != nil {
		c.RetentionTTL = time.Duration(*b.RetentionTTL)
	}
	return c, core.ValidateQueueConfig(c)
}

func (h *Handler) apiGetQueueConfig(w http.ResponseWriter, r *http.Request, p params) {
	q, err := queueName(p)
	var b core.QueueBackend
	if err == nil {
		b, err = h.st.forQueue(q)
	}
	var cfg core.QueueConfig
	if err == nil {
		cfg, err = b.GetQueueConfig(r.Context(), q)
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	cfg.Queue = q
	writeJSON(w, http.StatusOK, toQueueSettingsView(cfg))
}

func (h *Handler) apiPutQueueConfig(w http.ResponseWriter, r *http.Request, p params) {
	q, err := queueName(p)
	var body []byte
	if err == nil {
		body, err = readBody(r)
	}
	if err == nil {
		err = requireJSON(r, body)
	}
	var cfg core.QueueConfig
	if err == nil {
		cfg, err = h.putQueueConfig(r, q, body)
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toQueueSettingsView(cfg))
}

// putQueueConfig parses body over queue's stored config and stores it.
func (h *Handler) putQueueConfig(r *http.Request, queue string, body []byte) (core.QueueConfig, error) {
	b, err := h.st.forQueue(queue)
	if err != nil {
		return core.QueueConfig{}, err
	}
	stored, err := b.GetQueueConfig(r.Context(), queue)
	if err != nil {
		return core.QueueConfig{}, err
	}
	cfg, err := parseQueueConfig(body, queue, stored)
	if err != nil {
		return core.QueueConfig{}, err
	}
	if cfg.UsesFlowControl() {
		if _, err := flowControllers([]core.QueueBackend{b}, "max_running"); err != nil {
			return core.QueueConfig{}, err
		}
	}
	if err := b.PutQueueConfig(r.Context(), cfg); err != nil {
		return core.QueueConfig{}, err
	}
	h.log.InfoContext(r.Context(), "admin: queue config stored", "queue", queue, "max_running", cfg.MaxRunning)
	return cfg, nil
}

// queueSettingsView is a queue's stored config.
type queueSettingsView struct {
	Queue        string `json:"queue"`
	Paused       bool   `json:"paused"`
	RetentionTTL string `json:"retention_ttl,omitempty"`
	CleanupLimit int    `json:"cleanup_limit,omitempty"`
	MaxRunning   int    `json:"max_running,omitempty"`
}

func toQueueSettingsView(c core.QueueConfig) queueSettingsView {
	return queueSettingsView{Queue: c.Queue, Paused: c.Paused, RetentionTTL: durString(c.RetentionTTL), CleanupLimit: c.CleanupLimit, MaxRunning: c.MaxRunning}
}

// checkFlowConfig refuses a task config with flow limits when a backend
// it is stored on would not enforce them.
func (s stores) checkFlowConfig(cfg core.TaskConfig) error {
	if !cfg.UsesFlowControl() {
		return nil
	}
	_, err := flowControllers(s.all(), "max_running, max_running_per_key, max_starts_per_second, max_starts_per_second_per_key, hold_sequence_on_failure")
	return err
}

// checkFlowRequest refuses an enqueue with flow fields on a backend that
// would ignore them.
func checkFlowRequest(b core.QueueBackend, req core.EnqueueRequest) error {
	if !req.UsesFlowControl() {
		return nil
	}
	if _, ok := b.(core.FlowController); !ok {
		return fmt.Errorf("%w: the store does not offer flow control (limit_key, sequence_key, unique)", core.ErrUnsupported)
	}
	return nil
}
