package redisq

import "github.com/boson-go/boson/conformance/mutants"

// awaitMutants break the fan-in code of the scripts (see the fan-in
// helpers of luaLib and luaAwait); they join storeMutants, and the fan-in
// properties (mutants.AwaitProperties) join redisProperties.
var awaitMutants = []mutants.Mutant{{
	Name:     "finish-does-not-count",
	Breaks:   []string{mutants.AwaitCounts},
	Edits:    []mutants.Edit{{File: "lua_lib.go", Find: "  put(id, r)\n  awcount(k, id)\n  if kids then", Replace: "  put(id, r)\n  if kids then"}},
	CaughtBy: []string{"Await/AllComplete", "Await/AllFail", "Await/AllCancel", "Await/AllRescueFail", "Await/AllDeadline", "Await/AnyFirst"},
}, {
	Name:     "delete-does-not-count",
	Breaks:   []string{mutants.AwaitCounts},
	Edits:    []mutants.Edit{{File: "lua_lib.go", Find: "  awdrop(k, id)\n  awcount(k, id)\n", Replace: "  awdrop(k, id)\n"}},
	CaughtBy: []string{"Await/AllDeleteJob", "Await/AllDeleteQueue"},
}, {
	Name:     "edge-kept-after-count",
	Breaks:   []string{mutants.AwaitCounts},
	Edits:    []mutants.Edit{{File: "lua_lib.go", Find: "  redis.call('HDEL', k.edge, id)\n  local pos = 1", Replace: "  local pos = 1"}},
	CaughtBy: []string{"Await/RetryNoUncount"},
}, {
	Name:     "await-counts-terminal-as-pending",
	Breaks:   []string{mutants.AwaitCounts},
	Edits:    []mutants.Edit{{File: "lua_await.go", Find: `if cr[RST] < SUCCEEDED then pending = pending + 1 end`, Replace: `pending = pending + 1`}},
	CaughtBy: []string{"Await/AlreadyTerminal", "Await/AnyAlreadyTerminal"},
}, {
	Name:     "wake-leaves-run-at",
	Breaks:   []string{mutants.AwaitWakes},
	Edits:    []mutants.Edit{{File: "lua_lib.go", Find: "              wr[RRA] = now\n", Replace: ""}},
	CaughtBy: []string{"Await/AllComplete", "Await/AnyFirst", "Await/OwnQueue"},
}, {
	Name:     "satisfied-at-once-parked",
	Breaks:   []string{mutants.AwaitWakes, mutants.AwaitParks},
	Edits:    []mutants.Edit{{File: "lua_await.go", Find: `if sat or ra < now then ra = now end`, Replace: `if ra < now then ra = now end`}},
	CaughtBy: []string{"Await/AlreadyTerminal", "Await/AnyAlreadyTerminal"},
}, {
	Name:     "wake-ignores-token",
	Breaks:   []string{mutants.AwaitWakes},
	Edits:    []mutants.Edit{{File: "lua_lib.go", Find: `if wr and wr[RST] == SLEEPING and wr[RLT] == tok then`, Replace: `if wr and wr[RST] == SLEEPING then`}},
	CaughtBy: []string{"Await/StaleNotWoken"},
}, {
	Name:     "stale-wait-cancels-children",
	Breaks:   []string{mutants.AwaitCancelChildren},
	Edits:    []mutants.Edit{{File: "lua_lib.go", Find: `if w[4] ~= '1' or w[1] ~= r[RLT] then return nil end`, Replace: `if w[4] ~= '1' then return nil end`}},
	CaughtBy: []string{"Await/CancelChildrenStale"},
}, {
	Name:     "children-not-cancelled",
	Breaks:   []string{mutants.AwaitCancelChildren},
	Edits:    []mutants.Edit{{File: "lua_lib.go", Find: `local kids = old == SLEEPING and new == CANCELLED and awkids(k, id, r) or nil`, Replace: `local kids = nil`}},
	CaughtBy: []string{"Await/CancelChildren", "Await/CancelChildrenByDeadline"},
}, {
	Name:   "await-unfenced",
	Breaks: []string{mutants.AwaitParks},
	Edits: []mutants.Edit{{File: "lua_await.go",
		Find:    "local r = fence(k, id, ARGV[4])\nif not r then return {'lost'} end",
		Replace: "local r = get(k, id)\nif not r then return {'lost'} end"}},
	CaughtBy: []string{"Await/StaleLease"},
}}

func init() {
	storeMutants = append(storeMutants, awaitMutants...)
	redisProperties = append(redisProperties, mutants.AwaitProperties...)
}
