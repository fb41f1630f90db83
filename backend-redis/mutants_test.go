package redisq

import (
	"testing"

	"github.com/boson-go/boson/conformance/mutants"
)

// storeMutants break one rule each in the backend's own scripts and Go
// code. TestMutants builds the suite with each one in turn and requires the
// named cases to fail.
var storeMutants = []mutants.Mutant{{
	Name:   "claim-ignores-run-at",
	Breaks: []string{mutants.ClaimDueOnly},
	Edits: []mutants.Edit{
		{File: "lua_claim.go", Find: `redis.call('ZRANGEBYSCORE', k.sched, '-inf', nows, 'LIMIT'`, Replace: `redis.call('ZRANGEBYSCORE', k.sched, '-inf', '+inf', 'LIMIT'`},
		{File: "lua_claim.go", Find: `if r[RRA] > now then`, Replace: `if false then`},
	},
	CaughtBy: []string{"Claim/FutureRunAt", "Outcome/FailRetryAt", mutants.ModelCase},
}, {
	Name:     "claim-over-limit",
	Breaks:   []string{mutants.ClaimLimit},
	Edits:    []mutants.Edit{{File: "lua_claim.go", Find: `while more and got < limit do`, Replace: `while more and got <= limit do`}},
	CaughtBy: []string{"Claim/Limit", mutants.ModelCase},
}, {
	Name:     "token-reused",
	Breaks:   []string{mutants.TokensIncrease, mutants.FenceWrites},
	Edits:    []mutants.Edit{{File: "lua_claim.go", Find: `local tok = r[RLT] + 1`, Replace: `local tok = math.max(r[RLT], 1)`}},
	CaughtBy: []string{"Fencing/AfterRescue/Complete", "Reads/RunIDsUnique"},
}, {
	Name:     "fence-ignores-token",
	Breaks:   []string{mutants.FenceWrites},
	Edits:    []mutants.Edit{{File: "lua_lib.go", Find: `r[RST] ~= RUNNING or r[RLT] ~= tonumber(token) then`, Replace: `r[RST] ~= RUNNING then`}},
	CaughtBy: []string{"Fencing/AfterRescue/Complete", "Fencing/AfterRescue/Heartbeat", "Fencing/AfterRescue/SaveCheckpoint"},
}, {
	Name:   "fail-unfenced",
	Breaks: []string{mutants.FenceFail},
	Edits: []mutants.Edit{{File: "lua_claim.go",
		Find:    "local r = fence(k, id, ARGV[4])\nif not r then return {'lost'} end\nif ARGV[7] == '1'",
		Replace: "local r = get(k, id)\nif not r then return {'lost'} end\nif ARGV[7] == '1'"}},
	CaughtBy: []string{"Fencing/AfterRescue/Fail", "Fencing/AfterComplete/Fail", "Fencing/AfterCancel/Fail"},
}, {
	Name:   "sleep-unfenced",
	Breaks: []string{mutants.FenceSleep},
	Edits: []mutants.Edit{{File: "lua_claim.go",
		Find:    "local r = fence(k, id, ARGV[4])\nif not r then return {'lost'} end\nlocal ra = tonumber(ARGV[5])",
		Replace: "local r = get(k, id)\nif not r then return {'lost'} end\nlocal ra = tonumber(ARGV[5])"}},
	CaughtBy: []string{"Fencing/AfterRescue/Sleep", "Fencing/AfterComplete/Sleep", "Fencing/AfterCancel/Sleep"},
}, {
	Name:     "rescue-before-expiry",
	Breaks:   []string{mutants.RescueAfterExpiry},
	Edits:    []mutants.Edit{{File: "lua_control.go", Find: `redis.call('ZRANGEBYSCORE', k.lease, '-inf', nows,`, Replace: `redis.call('ZRANGEBYSCORE', k.lease, '-inf', '+inf',`}},
	CaughtBy: []string{"Lease/RescueOnlyExpired", mutants.ModelCase},
}, {
	Name:     "rescue-exhausted-requeued",
	Breaks:   []string{mutants.ExhaustedFails},
	Edits:    []mutants.Edit{{File: "lua_control.go", Find: "elseif r[RA] >= r[RMA] then\n      finish(k, id, r, FAILED, now, RUN_LOST", Replace: "elseif false then\n      finish(k, id, r, FAILED, now, RUN_LOST"}},
	CaughtBy: []string{"Lease/RescueExhaustedFails"},
}, {
	Name:     "fail-exhausted-requeued",
	Breaks:   []string{mutants.ExhaustedFails},
	Edits:    []mutants.Edit{{File: "lua_claim.go", Find: `if ARGV[7] == '1' or r[RA] >= r[RMA] then`, Replace: `if ARGV[7] == '1' then`}},
	CaughtBy: []string{"Outcome/FailAttemptsExhausted", mutants.ModelCase},
}, {
	Name:     "retry-keeps-max-attempts",
	Breaks:   []string{mutants.RetryGrowsAttempts},
	Edits:    []mutants.Edit{{File: "lua_lib.go", Find: `if r[RA] >= r[RMA] then r[RMA] = r[RA] + 1 end`, Replace: ``}},
	CaughtBy: []string{"Retry/SpentBudget"},
}, {
	Name:   "batch-written-before-conflict",
	Breaks: []string{mutants.BatchAtomic},
	Edits: []mutants.Edit{
		{File: "lua_enqueue.go", Find: "local seen = {}\nlocal reuse = {}", Replace: "local seen = {}\nlocal cx = nil\nlocal reuse = {}"},
		{File: "lua_enqueue.go", Find: `if s.fp ~= fp then return {'conflict', i} end`, Replace: `if s.fp ~= fp then cx = cx or i end`},
		{File: "lua_enqueue.go", Find: "writejobs(now, groups, ARGV, first, n, reuse)\n", Replace: "writejobs(now, groups, ARGV, first, n, reuse)\nif cx then return {'conflict', cx} end\n"},
	},
	CaughtBy: []string{"Idempotency/Conflict", "Idempotency/ConflictWithinBatch"},
}, {
	Name:   "cleanup-ignores-horizon",
	Breaks: []string{mutants.CleanupHorizon},
	Edits: []mutants.Edit{
		{File: "control.go", Find: `Min: "-inf", Max: "(" + strconv.FormatInt(before, 10), Count: int64(req.Limit),`, Replace: `Min: "-inf", Max: "(" + strconv.FormatInt(before+1<<50, 10), Count: int64(req.Limit),`},
		{File: "lua_control.go", Find: `r[RFA] > 0 and r[RFA] < before then`, Replace: `r[RFA] > 0 then`},
	},
	CaughtBy: []string{"Cleanup/OnlyTerminalBeforeHorizon"},
}, {
	Name:   "cleanup-deletes-live",
	Breaks: []string{mutants.CleanupTerminalOnly},
	Edits: []mutants.Edit{
		{File: "control.go", Find: `cmds[i] = pipe.ZRangeByScoreWithScores(ctx, b.ks.queueKeys(q)[kDone], &redis.ZRangeBy{`, Replace: `cmds[i] = pipe.ZRangeByScoreWithScores(ctx, b.ks.queueKeys(q)[kLease], &redis.ZRangeBy{`},
		{File: "lua_control.go", Find: `if st and st >= SUCCEEDED and r[RFA] > 0 and r[RFA] < before then`, Replace: `if st then`},
	},
	CaughtBy: []string{"Cleanup/OnlyTerminalBeforeHorizon"},
}, {
	Name:     "cleanup-keeps-key",
	Breaks:   []string{mutants.CleanupReleasesKey},
	Edits:    []mutants.Edit{{File: "lua_lib.go", Find: `if v and string.sub(v, 1, #id + 1) == id .. ':' then redis.call('HDEL', k.idem, r[RIK]) end`, Replace: ``}},
	CaughtBy: []string{"Idempotency/ReleasedByCleanup"},
}, {
	Name:   "page-repeats-cursor",
	Breaks: []string{mutants.PagesExactlyOnce},
	Edits: []mutants.Edit{
		{File: "walk.go", Find: "at := \"(\"\n\t\tif w.incl {", Replace: "at := \"[\"\n\t\tif w.incl {"},
		{File: "walk.go", Find: "case w.incl && id == w.pos:", Replace: "case id == w.pos:"},
	},
	CaughtBy: []string{"Reads/PaginationAscending", "Reads/PaginationExactPages"},
}, {
	Name:   "queues-share-keys",
	Breaks: []string{mutants.QueueIsolation},
	Edits: []mutants.Edit{{File: "keys.go",
		Find:    "\treturn \"{\" + ks.prefix + \":\" + queue + \"}:\"",
		Replace: "\treturn \"{\" + ks.prefix + \":shared}:\""}},
	CaughtBy: []string{"Claim/QueueIsolation"},
}, {
	Name:     "enqueue-does-not-publish",
	Breaks:   []string{mutants.Notifications},
	Edits:    []mutants.Edit{{File: "lua_enqueue.go", Find: `if groups[g].due and groups[g].chan ~= '' then redis.call('PUBLISH', groups[g].chan, '1') end`, Replace: ``}},
	CaughtBy: []string{"Capabilities/NotifyOnEnqueue"},
}, {
	Name:     "claim-ignores-key-limit",
	Breaks:   []string{mutants.ClaimLimit},
	Edits:    []mutants.Edit{{File: "lua_claim.go", Find: `elseif lk and c[2] > 0 and t >= c[2] and keycount(task, lk) >= c[2] then`, Replace: `elseif false then`}},
	CaughtBy: []string{"FlowLimits/KeyMaxRunning", "FlowExact/KeyLimit"},
}, {
	Name:     "running-count-never-falls",
	Breaks:   []string{mutants.ClaimLimit},
	Edits:    []mutants.Edit{{File: "lua_lib.go", Find: `    bump(k.flow, 't', task, d)`, Replace: `    if d > 0 then bump(k.flow, 't', task, d) end`}},
	CaughtBy: []string{"FlowLimits/FreedByComplete", "FlowLimits/FreedByFail", "FlowLimits/FreedBySleep"},
}, {
	Name:     "claim-counts-jobs-alone",
	Breaks:   []string{mutants.ClaimLimit},
	Edits:    []mutants.Edit{{File: "lua_claim.go", Find: `  RC[tg] = t + 1`, Replace: ``}},
	CaughtBy: []string{"FlowLimits/ClaimCountsTogether", "FlowLimits/ConfigChangeNextClaim"},
}, {
	Name:     "claim-counts-key-jobs-alone",
	Breaks:   []string{mutants.ClaimLimit},
	Edits:    []mutants.Edit{{File: "lua_claim.go", Find: `    kd[lk] = (kd[lk] or 0) + 1`, Replace: ``}},
	CaughtBy: []string{"FlowLimits/KeyMaxRunning"},
}, {
	// key counts are kept from the claim that brings a task to its per-key
	// limit: they must start from the jobs that run already
	Name:     "kept-key-counts-start-empty",
	Breaks:   []string{mutants.ClaimLimit},
	Edits:    []mutants.Edit{{File: "lua_lib.go", Find: `if lk and lk ~= '' and r[RT] == task and r[RST] == RUNNING then n[lk] = (n[lk] or 0) + 1 end`, Replace: ``}},
	CaughtBy: []string{"FlowLimits/KeyAcrossQueues", "FlowLimits/KeyPerTask", "FlowReads/RunningByKey"},
}, {
	// and from the jobs the same claim started before they were kept
	Name:     "kept-key-counts-miss-the-claims-starts",
	Breaks:   []string{mutants.ClaimLimit},
	Edits:    []mutants.Edit{{File: "lua_claim.go", Find: `    for key, d in pairs(KD[task] or {}) do bump(k.flow, kp, key, d) end`, Replace: ``}},
	CaughtBy: []string{"FlowLimits/KeyPerTask", "FlowLimits/ConfigChangeNextClaim"},
}}

// redisProperties are the properties the mutants must cover. A claim is one
// script, which Redis runs alone, so there is no lock whose loss could hand
// a job to two claims; that property has no mutant here.
var redisProperties = []string{
	mutants.RescueAfterExpiry, mutants.ExhaustedFails, mutants.TokensIncrease, mutants.BatchAtomic,
	mutants.CleanupHorizon, mutants.CleanupTerminalOnly, mutants.CleanupReleasesKey, mutants.PagesExactlyOnce,
	mutants.ClaimLimit, mutants.QueueIsolation, mutants.RetryGrowsAttempts, mutants.Notifications,
	mutants.FenceFail, mutants.FenceSleep, mutants.ClaimDueOnly, mutants.FenceWrites,
}

func TestMutantsCoverProperties(t *testing.T) {
	mutants.RequireCoverage(t, storeMutants, redisProperties, 3)
}

// TestMutants runs the suite once per mutant of the scripts and requires
// each to be caught by the cases it names.
func TestMutants(t *testing.T) {
	standaloneURL(t)
	mutants.Run(t, mutants.Target{Test: "TestConformanceStandalone", Args: []string{"-rapid.checks=50", "-rapid.nofailfile"}}, storeMutants)
}
