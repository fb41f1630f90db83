package conformance

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/boson-go/boson/core"
)

// testDeclare: core.QueueDeclarer — declaring queues with CreateQueue,
// idempotent on an equal config, refused with ErrQueueConflict on another,
// atomic under concurrent calls, separate from PutQueueConfig, and
// undeclared by a finished DeleteQueue.
func testDeclare(t *testing.T, h Harness) {
	if !h.Capabilities.Declare {
		cases(t, h, map[string]func(e *env){"Undeclared": declareUndeclared})
		return
	}
	cs := map[string]func(e *env){
		"Create":                  declareCreate,
		"RepeatEqual":             declareRepeatEqual,
		"RepeatPausedMatches":     declareRepeatPaused,
		"Conflict":                declareConflict,
		"PutConfigDoesNotDeclare": declarePutConfig,
		"PutConfigKeepsDeclared":  declarePutKeeps,
		"JobsDoNotDeclare":        declareJobs,
		"KeepsPause":              declareKeepsPause,
		"Invalid":                 declareInvalid,
		"OtherQueues":             declareOthers,
		"RaceEqual":               declareRaceEqual,
		"RaceDifferent":           declareRaceDifferent,
		"ClaimsAndPause":          declareClaims,
	}
	if h.Capabilities.Delete {
		cs["DeleteQueueUndeclares"] = declareDelete
	}
	cases(t, h, cs)
}

func (e *env) declarer() core.QueueDeclarer {
	e.t.Helper()
	qd, ok := e.b.(core.QueueDeclarer)
	if !ok {
		e.t.Fatalf("the harness declares Declare but %T does not implement core.QueueDeclarer", e.b)
	}
	return qd
}

// createQueue declares cfg and fails the case on an error.
func (e *env) createQueue(cfg core.QueueConfig) (core.QueueConfig, bool) {
	e.t.Helper()
	got, created, err := e.declarer().CreateQueue(e.ctx, cfg)
	if err != nil {
		e.t.Fatalf("CreateQueue(%+v): %v", cfg, err)
	}
	return got, created
}

// requireDeclared checks QueueDeclared, and the queue's Declared flag in
// ListQueues (a declared queue must be listed).
func (e *env) requireDeclared(queue string, want bool, what string) {
	e.t.Helper()
	got, err := e.declarer().QueueDeclared(e.ctx, queue)
	if err != nil {
		e.t.Fatalf("QueueDeclared(%s) %s: %v", queue, what, err)
	}
	requireEq(e.t, got, want, "QueueDeclared("+queue+") "+what)
	qs, err := e.b.ListQueues(e.ctx)
	if err != nil {
		e.t.Fatalf("ListQueues: %v", err)
	}
	listed := false
	for _, q := range qs {
		if q.Queue == queue {
			listed = true
			requireEq(e.t, q.Declared, want, "ListQueues Declared of "+queue+" "+what)
		}
	}
	if want && !listed {
		e.t.Fatalf("ListQueues %s = %+v: the declared queue %s is missing", what, qs, queue)
	}
}

// requireQueueConfig checks the stored config.
func (e *env) requireQueueConfig(want core.QueueConfig, what string) {
	e.t.Helper()
	got, err := e.b.GetQueueConfig(e.ctx, want.Queue)
	if err != nil {
		e.t.Fatalf("GetQueueConfig(%s): %v", want.Queue, err)
	}
	if got != want {
		e.t.Fatalf("GetQueueConfig(%s) %s = %+v, want %+v", want.Queue, what, got, want)
	}
}

func declCfg(queue string) core.QueueConfig {
	return core.QueueConfig{Queue: queue, RetentionTTL: 2 * time.Hour, CleanupLimit: 50}
}

func declareUndeclared(e *env) {
	if qd, ok := e.b.(core.QueueDeclarer); ok {
		_, _, err := qd.CreateQueue(e.ctx, declCfg("q"))
		e.requireUnsupported(err, "CreateQueue")
		_, err = qd.QueueDeclared(e.ctx, "q")
		e.requireUnsupported(err, "QueueDeclared")
	}
	_, _, err := core.CreateQueue(e.ctx, e.b, declCfg("q"))
	e.requireUnsupported(err, "core.CreateQueue")
	qs, err := e.b.ListQueues(e.ctx)
	if err != nil {
		e.t.Fatalf("ListQueues: %v", err)
	}
	for _, q := range qs {
		if q.Declared {
			e.t.Fatalf("ListQueues reports %s declared on a store without declarations", q.Queue)
		}
	}
}

func declareCreate(e *env) {
	e.requireDeclared("q", false, "before CreateQueue")
	cfg := declCfg("q")
	got, created := e.createQueue(cfg)
	requireEq(e.t, created, true, "created of the first CreateQueue")
	requireEq(e.t, got, cfg, "stored config returned by CreateQueue")
	e.requireQueueConfig(cfg, "after CreateQueue")
	e.requireDeclared("q", true, "after CreateQueue")
	qs, err := e.b.ListQueues(e.ctx)
	if err != nil || len(qs) != 1 || qs[0].Queue != "q" || len(nonZero(qs[0].Jobs)) != 0 || qs[0].Paused {
		e.t.Fatalf("ListQueues after CreateQueue of an empty queue = %+v, %v", qs, err)
	}
}

func declareRepeatEqual(e *env) {
	cfg := declCfg("q")
	e.createQueue(cfg)
	for i := 0; i < 3; i++ {
		got, created := e.createQueue(cfg)
		requireEq(e.t, created, false, "created of a repeat CreateQueue")
		requireEq(e.t, got, cfg, "stored config returned by a repeat CreateQueue")
	}
	e.requireQueueConfig(cfg, "after repeats")
	e.requireDeclared("q", true, "after repeats")
}

// declareRepeatPaused: Paused is operational state, not part of the
// declaration: a repeat with another pause flag matches and changes
// nothing, in either direction.
func declareRepeatPaused(e *env) {
	cfg := declCfg("q")
	e.createQueue(cfg)
	paused := cfg
	paused.Paused = true
	got, created := e.createQueue(paused)
	requireEq(e.t, created, false, "created of a repeat asking for a pause")
	requireEq(e.t, got, cfg, "a repeat CreateQueue asking for a pause")
	e.requireQueueConfig(cfg, "after a repeat asking for a pause")

	if err := e.b.PutQueueConfig(e.ctx, paused); err != nil {
		e.t.Fatalf("PutQueueConfig: %v", err)
	}
	got, created = e.createQueue(cfg)
	requireEq(e.t, created, false, "created of a repeat on a paused queue")
	requireEq(e.t, got, paused, "a repeat CreateQueue on a queue paused since")
	e.requireQueueConfig(paused, "a repeat must not resume the queue")
}

func declareConflict(e *env) {
	cfg := declCfg("q")
	if e.h.Capabilities.Flow {
		cfg.MaxRunning = 3 // stored only by stores that enforce it
	}
	e.createQueue(cfg)
	others := map[string]core.QueueConfig{}
	o := cfg
	o.RetentionTTL = time.Hour
	others["retention"] = o
	o = cfg
	o.RetentionTTL = 0
	others["default retention"] = o
	o = cfg
	o.CleanupLimit = 51
	others["cleanup limit"] = o
	if e.h.Capabilities.Flow {
		o = cfg
		o.MaxRunning = 0
		others["max running"] = o
	}
	for _, name := range sortedKeys(others) {
		got, created, err := e.declarer().CreateQueue(e.ctx, others[name])
		requireErr(e.t, err, core.ErrQueueConflict, "CreateQueue with another "+name)
		requireErr(e.t, err, core.ErrIdempotencyConflict, "CreateQueue with another "+name)
		requireEq(e.t, created, false, "created of a conflicting CreateQueue")
		requireEq(e.t, got, cfg, "stored config returned with the conflict on "+name)
		e.requireQueueConfig(cfg, "after a conflict on "+name)
	}
	e.requireDeclared("q", true, "after conflicts")
	got, created := e.createQueue(cfg)
	requireEq(e.t, created, false, "created of the original config after conflicts")
	requireEq(e.t, got, cfg, "the original config after conflicts")
}

// declarePutConfig: a config stored with PutQueueConfig does not declare
// the queue; CreateQueue then declares it with its own config.
func declarePutConfig(e *env) {
	put := core.QueueConfig{Queue: "q", RetentionTTL: time.Minute, CleanupLimit: 7}
	if err := e.b.PutQueueConfig(e.ctx, put); err != nil {
		e.t.Fatalf("PutQueueConfig: %v", err)
	}
	e.requireDeclared("q", false, "after PutQueueConfig alone")
	cfg := declCfg("q")
	got, created := e.createQueue(cfg)
	requireEq(e.t, created, true, "created of CreateQueue on a queue with a config but no declaration")
	requireEq(e.t, got, cfg, "the config CreateQueue stores over an undeclared one")
	e.requireQueueConfig(cfg, "after declaring over a stored config")
	e.requireDeclared("q", true, "after CreateQueue")
}

// declarePutKeeps: PutQueueConfig on a declared queue keeps it declared,
// and CreateQueue then checks against the config stored since.
func declarePutKeeps(e *env) {
	cfg := declCfg("q")
	e.createQueue(cfg)
	changed := cfg
	changed.RetentionTTL = 5 * time.Hour
	if err := e.b.PutQueueConfig(e.ctx, changed); err != nil {
		e.t.Fatalf("PutQueueConfig: %v", err)
	}
	e.requireDeclared("q", true, "after PutQueueConfig on a declared queue")
	_, _, err := e.declarer().CreateQueue(e.ctx, cfg)
	requireErr(e.t, err, core.ErrQueueConflict, "CreateQueue with the config replaced since")
	e.requireQueueConfig(changed, "after the conflict")
	got, created := e.createQueue(changed)
	requireEq(e.t, created, false, "created of CreateQueue with the config stored since")
	requireEq(e.t, got, changed, "CreateQueue with the config stored since")
}

func declareJobs(e *env) {
	e.enqueueN("q", "t", 2)
	e.claimOne("q")
	e.requireDeclared("q", false, "with jobs")
	cfg := declCfg("q")
	_, created := e.createQueue(cfg)
	requireEq(e.t, created, true, "created of CreateQueue on a queue with jobs")
	e.requireDeclared("q", true, "after CreateQueue")
	if d := diff(map[core.JobState]int64{core.StateQueued: 1, core.StateRunning: 1}, e.count(core.JobFilter{Queue: "q"})); d != "" {
		e.t.Fatalf("jobs of the queue after CreateQueue: %s", d)
	}
}

// declareKeepsPause: declaring a paused queue keeps it paused.
func declareKeepsPause(e *env) {
	if err := e.b.PutQueueConfig(e.ctx, core.QueueConfig{Queue: "q", Paused: true}); err != nil {
		e.t.Fatalf("PutQueueConfig: %v", err)
	}
	e.enqueueOne(req("q", "t"))
	cfg := declCfg("q")
	got, created := e.createQueue(cfg)
	requireEq(e.t, created, true, "created of CreateQueue on a paused queue")
	want := cfg
	want.Paused = true
	requireEq(e.t, got, want, "CreateQueue on a paused queue must keep it paused")
	e.requireQueueConfig(want, "after declaring a paused queue")
	e.claimNone("q", "the declared queue is still paused")
}

func declareInvalid(e *env) {
	for name, cfg := range map[string]core.QueueConfig{
		"empty name":         {},
		"long name":          {Queue: string(make([]byte, core.MaxNameLength+1))},
		"negative retention": {Queue: "q", RetentionTTL: -time.Second},
		"negative cleanup":   {Queue: "q", CleanupLimit: -1},
		"negative running":   {Queue: "q", MaxRunning: -1},
	} {
		_, created, err := e.declarer().CreateQueue(e.ctx, cfg)
		requireErr(e.t, err, core.ErrInvalidArgument, "CreateQueue with "+name)
		requireEq(e.t, created, false, "created of an invalid CreateQueue")
	}
	_, err := e.declarer().QueueDeclared(e.ctx, "")
	requireErr(e.t, err, core.ErrInvalidArgument, "QueueDeclared of an empty name")
	e.requireDeclared("q", false, "after invalid CreateQueue calls")
	e.requireQueueConfig(core.QueueConfig{Queue: "q"}, "after invalid CreateQueue calls")
}

func declareOthers(e *env) {
	e.createQueue(declCfg("a"))
	e.enqueueOne(req("b", "t"))
	if err := e.b.PutQueueConfig(e.ctx, core.QueueConfig{Queue: "c", Paused: true}); err != nil {
		e.t.Fatalf("PutQueueConfig: %v", err)
	}
	e.requireDeclared("a", true, "after declaring it")
	e.requireDeclared("b", false, "after declaring a")
	e.requireDeclared("c", false, "after declaring a")
	e.requireDeclared("ab", false, "after declaring a")
	bcfg := declCfg("b")
	bcfg.CleanupLimit = 9
	_, created := e.createQueue(bcfg)
	requireEq(e.t, created, true, "created of b, declared with another config than a")
	e.requireQueueConfig(declCfg("a"), "a after declaring b")
}

// declareRaceEqual: concurrent CreateQueue calls with one config: exactly
// one creates, every one succeeds with that config.
func declareRaceEqual(e *env) {
	const n = 8
	cfg := declCfg("q")
	type res struct {
		cfg     core.QueueConfig
		created bool
		err     error
	}
	out := make([]res, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			c, created, err := e.declarer().CreateQueue(e.ctx, cfg)
			out[i] = res{c, created, err}
		}()
	}
	close(start)
	wg.Wait()
	creators := 0
	for i, r := range out {
		if r.err != nil {
			e.t.Fatalf("racing CreateQueue %d with an equal config: %v", i, r.err)
		}
		requireEq(e.t, r.cfg, cfg, "config returned by racing CreateQueue "+itoa(i))
		if r.created {
			creators++
		}
	}
	requireEq(e.t, creators, 1, "racing CreateQueue calls that report created")
	e.requireQueueConfig(cfg, "after the race")
	e.requireDeclared("q", true, "after the race")
}

// declareRaceDifferent: concurrent CreateQueue calls with distinct
// configs: exactly one creates, every other one reports the conflict with
// the winner's config, and the winner's config is stored.
func declareRaceDifferent(e *env) {
	const n = 8
	type res struct {
		cfg     core.QueueConfig
		created bool
		err     error
	}
	out := make([]res, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cfg := declCfg("q")
			cfg.CleanupLimit = 100 + i
			<-start
			c, created, err := e.declarer().CreateQueue(e.ctx, cfg)
			out[i] = res{c, created, err}
		}()
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, r := range out {
		if r.created {
			if winner >= 0 {
				e.t.Fatalf("racing CreateQueue calls %d and %d both report created", winner, i)
			}
			if r.err != nil {
				e.t.Fatalf("the creating CreateQueue %d also failed: %v", i, r.err)
			}
			winner = i
		}
	}
	if winner < 0 {
		e.t.Fatalf("no racing CreateQueue reports created: %+v", out)
	}
	want := out[winner].cfg
	requireEq(e.t, want.CleanupLimit, 100+winner, "the winner's stored cleanup limit")
	for i, r := range out {
		if i == winner {
			continue
		}
		if !errors.Is(r.err, core.ErrQueueConflict) {
			e.t.Fatalf("losing CreateQueue %d with another config: %v, want ErrQueueConflict", i, r.err)
		}
		requireEq(e.t, r.cfg, want, "config returned to losing CreateQueue "+itoa(i))
	}
	e.requireQueueConfig(want, "after the race")
}

// declareClaims: jobs of a declared queue are claimed as usual, and a
// queue declared paused hands out no claims until it is resumed.
func declareClaims(e *env) {
	e.createQueue(declCfg("q"))
	j := e.enqueueOne(req("q", "t"))
	requireEq(e.t, e.claimOne("q").ID, j.ID, "the job claimed from a declared queue")

	p := declCfg("p")
	p.Paused = true
	got, created := e.createQueue(p)
	requireEq(e.t, created, true, "created of a queue declared paused")
	requireEq(e.t, got, p, "a queue declared paused")
	k := e.enqueueOne(req("p", "t"))
	e.claimNone("p", "the queue was declared paused")
	resumed := p
	resumed.Paused = false
	if err := e.b.PutQueueConfig(e.ctx, resumed); err != nil {
		e.t.Fatalf("PutQueueConfig: %v", err)
	}
	requireEq(e.t, e.claimOne("p").ID, k.ID, "the job claimed once the queue was resumed")
	e.requireDeclared("p", true, "after resuming")
}

// declareDelete: DeleteQueue undeclares the queue in the step that
// reports Done, not before; the queue can then be declared again.
func declareDelete(e *env) {
	cfg := declCfg("q")
	e.createQueue(cfg)
	e.enqueueN("q", "t", 2)
	res, err := e.deleter().DeleteQueue(e.ctx, core.DeleteQueueRequest{Queue: "q", Limit: 1})
	if err != nil || res.Done {
		e.t.Fatalf("first DeleteQueue step = %+v, %v; want one deleted, not done", res, err)
	}
	e.requireDeclared("q", true, "while jobs are left")
	for i := 0; !res.Done; i++ {
		if i > 5 {
			e.t.Fatal("DeleteQueue is not done after 5 steps")
		}
		res, err = e.deleter().DeleteQueue(e.ctx, core.DeleteQueueRequest{Queue: "q", Limit: 1})
		if err != nil {
			e.t.Fatalf("DeleteQueue: %v", err)
		}
	}
	e.requireDeclared("q", false, "after DeleteQueue is done")
	e.requireQueueConfig(core.QueueConfig{Queue: "q"}, "after DeleteQueue is done")

	// An empty declared queue is undeclared in one step.
	e.createQueue(declCfg("e"))
	res, err = e.deleter().DeleteQueue(e.ctx, core.DeleteQueueRequest{Queue: "e", Limit: 1})
	if err != nil || !res.Done {
		e.t.Fatalf("DeleteQueue of an empty declared queue = %+v, %v; want done", res, err)
	}
	e.requireDeclared("e", false, "after deleting the empty queue")

	other := cfg
	other.CleanupLimit = 1
	got, created := e.createQueue(other)
	requireEq(e.t, created, true, "created of CreateQueue after the queue was deleted")
	requireEq(e.t, got, other, "the config of the queue declared again")
}
