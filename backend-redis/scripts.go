package redisq

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"

	"github.com/redis/go-redis/v9"
)

// luaScript is one piece of the backend's server-side code: a function of
// the Functions library (its name for FCALL) and, for servers without
// Functions, a standalone script (its source, and its SHA-1 for EVALSHA).
type luaScript struct {
	name string // function name in the library
	body string
	src  string // the script for EVAL: the helpers the body uses, then the body
	hash string
	keys []int // the queue keys it touches (k* indexes), in KEYS order per queue
}

// scriptHead and scriptTail wrap a body into a script for EVAL. The body
// reads KEYS and ARGV through the library's upvalues and runs as a function,
// so that every return path flushes the collected writes of the queue
// (group 1; the enqueue script flushes its other groups itself).
const (
	scriptHead = "local KEYS, ARGV = KEYS, ARGV\n"
	scriptTail = "\nend\nKF = $KF\nbegin()\nlocal r = main()\nsettle(keys(1))\nflush(keys(1))\nreturn r\n"
)

// luaKeyRef finds the queue keys a script touches: every key is reached as
// a field of a keys() table named k.
var luaKeyRef = regexp.MustCompile(`\bk\.([a-z]+)\b`)

func newScript(name, body string) *luaScript {
	s := &luaScript{name: name, body: body}
	main := "local function main()\n" + body + scriptTail
	used := map[string]bool{}
	for _, m := range luaKeyRef.FindAllStringSubmatch(luaLibFor(main)+main, -1) {
		used[m[1]] = true
	}
	for i, n := range keyNames {
		if used[n] {
			s.keys = append(s.keys, i)
			delete(used, n)
		}
	}
	if len(used) > 0 {
		panic(fmt.Sprintf("redisq: script %s names unknown keys %v", name, used))
	}
	main = "local function main()\n" + body + strings.Replace(scriptTail, "$KF", s.keysFunc(), 1)
	s.src = scriptHead + luaLibFor(main) + main
	sum := sha1.Sum([]byte(s.src))
	s.hash = hex.EncodeToString(sum[:])
	return s
}

// keysFunc is the Lua function that names the script's keys of queue
// group g: a table constructor, which Lua sizes once.
func (s *luaScript) keysFunc() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "function(g)\n  local b = (g - 1) * %d\n  return {", len(s.keys))
	for i, k := range s.keys {
		if i > 0 {
			sb.WriteString(", ")
		}
		fmt.Fprintf(&sb, "%s = KEYS[b + %d]", keyNames[k], i+1)
	}
	sb.WriteString("}\nend")
	return sb.String()
}

// The scripts of the backend.
var (
	scriptEnqueue      = newScript("enqueue", luaEnqueue)
	scriptApply        = newScript("apply", luaApply)
	scriptAbort        = newScript("abort", luaAbort)
	scriptDecide       = newScript("decide", luaDecide)
	scriptClaim        = newScript("claim", luaClaim)
	scriptHeartbeat    = newScript("heartbeat", luaHeartbeat)
	scriptComplete     = newScript("complete", luaComplete)
	scriptFail         = newScript("fail", luaFail)
	scriptSleep        = newScript("sleep", luaSleep)
	scriptCheckpoint   = newScript("checkpoint", luaCheckpoint)
	scriptCancel       = newScript("cancel", luaCancel)
	scriptRetry        = newScript("retry", luaRetry)
	scriptBulk         = newScript("bulk", luaBulk)
	scriptRescue       = newScript("rescue", luaRescue)
	scriptCleanup      = newScript("cleanup", luaCleanup)
	scriptDeleteJob    = newScript("delete_job", luaDeleteJob)
	scriptDeleteQ      = newScript("delete_queue", luaDeleteQueue)
	scriptFlowConfig   = newScript("flow_config", luaFlowConfig)
	scriptRunningByKey = newScript("running_by_key", luaRunningByKey)
	scriptAwait        = newScript("await", luaAwait)
)

// allScripts lists every script of the backend.
var allScripts = []*luaScript{scriptEnqueue, scriptApply, scriptAbort, scriptDecide, scriptClaim, scriptHeartbeat,
	scriptComplete, scriptFail, scriptSleep, scriptCheckpoint, scriptCancel, scriptRetry, scriptBulk, scriptRescue, scriptCleanup,
	scriptDeleteJob, scriptDeleteQ, scriptFlowConfig, scriptRunningByKey, scriptAwait}

// library is the Functions library of every script, named after a hash of
// its code: "boson_<hash>", each function "boson_<hash>_<script>". A
// server holds the library of every version that used it, and versions
// never call each other's functions.
var library = buildLibrary()

// libraryName is the name of library.
var libraryName string

// buildLibrary makes the library and sets each script's function name. The
// library runs its top level once, when it is loaded; every call then
// starts in entry, which hands the call's keys and arguments to the
// helpers and empties the call's state.
func buildLibrary() string {
	h := sha1.New()
	h.Write([]byte(luaLib))
	for _, s := range allScripts {
		h.Write([]byte(s.name + "\n" + s.body))
	}
	libraryName = "boson_" + hex.EncodeToString(h.Sum(nil))[:16]
	var sb strings.Builder
	sb.WriteString("#!lua name=" + libraryName + "\nlocal KEYS, ARGV\n")
	sb.WriteString(luaLib)
	sb.WriteString(`
local function entry(main, kf)
  return function(k, a)
    KEYS, ARGV, KF = k, a, kf
    begin()
    local r = main()
    settle(keys(1))
    flush(keys(1))
    return r
  end
end
`)
	for _, s := range allScripts {
		s.name = libraryName + "_" + s.name
		sb.WriteString("redis.register_function('" + s.name + "', entry(function()\n" + s.body + "\nend, " + s.keysFunc() + "))\n")
	}
	return sb.String()
}

// noRetry marks a script call that the client must not send again by
// itself. A call whose reply timed out may still have run on the server, and
// running a transition twice is not what the caller asked for (a second
// claim would take more jobs, a second enqueue would write the batch over
// jobs already claimed); the caller gets the error and decides.
type noRetry struct{ *redis.Cmd }

// NoRetry tells go-redis not to retry the command.
func (noRetry) NoRetry() bool { return true }

// eval runs s: with FCALL while the backend uses the Functions library
// (loading it first on a node that does not have it yet, after a restart, a
// failover or FUNCTION FLUSH), else with EVALSHA, and with EVAL when the
// server does not know the script yet. A "function not found" or NOSCRIPT
// reply means that nothing ran, so sending the call again is safe. A server
// that has no Functions (before Redis 7.0) or refuses FUNCTION or FCALL
// (renamed, or denied by an ACL) turns the backend to EVALSHA for good.
func (b *Backend) eval(ctx context.Context, s *luaScript, keys []string, args ...any) (any, error) {
	if b.functions.Load() {
		res, err := b.call(ctx, "fcall", s.name, keys, args)
		if err != nil && redis.HasErrorPrefix(err, "Function not found") {
			if err = b.loadLibrary(ctx, keys[0]); err == nil {
				res, err = b.call(ctx, "fcall", s.name, keys, args)
			}
		}
		if err == nil || !refusesFunctions(err) {
			return res, err
		}
		if b.functions.Swap(false) {
			b.opts.Logger.Warn("redisq: the server refuses Redis Functions; running scripts with EVALSHA", "err", err)
		}
	}
	res, err := b.call(ctx, "evalsha", s.hash, keys, args)
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		res, err = b.call(ctx, "eval", s.src, keys, args)
	}
	return res, err
}

// refusesFunctions reports whether err says that the server does not offer
// FCALL or FUNCTION to this client, as opposed to an error of the call.
func refusesFunctions(err error) bool {
	msg := strings.ToLower(err.Error())
	if !strings.Contains(msg, "fcall") && !strings.Contains(msg, "function") {
		return false
	}
	return strings.Contains(msg, "unknown command") || strings.Contains(msg, "unknown subcommand") || strings.HasPrefix(msg, "noperm")
}

// loadLibrary loads the library on the node that serves key (on every
// shard of a Ring).
func (b *Backend) loadLibrary(ctx context.Context, key string) error {
	load := func(ctx context.Context, c redis.Cmdable) error {
		err := c.FunctionLoad(ctx, library).Err()
		if err != nil && strings.Contains(err.Error(), "already exists") {
			return nil // loaded meanwhile by another call
		}
		return err
	}
	switch c := b.rdb.(type) {
	case *redis.ClusterClient:
		node, err := c.MasterForKey(ctx, key)
		if err != nil {
			return err
		}
		return load(ctx, node)
	case *redis.Ring:
		return c.ForEachShard(ctx, func(ctx context.Context, shard *redis.Client) error { return load(ctx, shard) })
	}
	return load(ctx, b.rdb)
}

func (b *Backend) call(ctx context.Context, name, script string, keys []string, args []any) (any, error) {
	all := make([]any, 0, 3+len(keys)+len(args))
	all = append(all, name, script, len(keys))
	for _, k := range keys {
		all = append(all, k)
	}
	all = append(all, args...)
	cmd := redis.NewCmd(ctx, all...)
	cmd.SetFirstKeyPos(3)
	_ = b.rdb.Process(ctx, noRetry{cmd})
	return cmd.Result()
}

// libBlock is one top-level definition of luaLib.
type libBlock struct {
	names []string // the locals it defines
	text  string
	uses  []string // identifiers it mentions
}

var (
	luaIdent  = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
	luaLocal  = regexp.MustCompile(`^local\s+function\s+([A-Za-z_][A-Za-z0-9_]*)|^local\s+([A-Za-z_][A-Za-z0-9_, ]*?)\s*(?:=|$)`)
	libBlocks = splitLib(luaLib)
)

// splitLib cuts luaLib into its top-level definitions (each starts with a
// "local" at the start of a line), without comment lines.
func splitLib(lib string) []libBlock {
	var out []libBlock
	for _, line := range strings.Split(lib, "\n") {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "--") {
			continue
		}
		if m := luaLocal.FindStringSubmatch(line); m != nil {
			names := m[1]
			if names == "" {
				names = m[2]
			}
			var b libBlock
			for _, n := range strings.Split(names, ",") {
				b.names = append(b.names, strings.TrimSpace(n))
			}
			out = append(out, b)
		}
		if len(out) == 0 {
			continue
		}
		out[len(out)-1].text += line + "\n"
	}
	for i := range out {
		out[i].uses = luaIdent.FindAllString(out[i].text, -1)
	}
	return out
}

// luaLibFor returns the definitions of luaLib that body needs, directly or
// through other definitions, in their order in luaLib. A script runs its
// whole prologue on every call, so defining only what it uses makes every
// call cheaper.
func luaLibFor(body string) string {
	defined := map[string]int{}
	for i, b := range libBlocks {
		for _, n := range b.names {
			defined[n] = i
		}
	}
	need := make([]bool, len(libBlocks))
	var visit func(idents []string)
	visit = func(idents []string) {
		for _, id := range idents {
			if i, ok := defined[id]; ok && !need[i] {
				need[i] = true
				visit(libBlocks[i].uses)
			}
		}
	}
	visit(luaIdent.FindAllString(body, -1))
	var sb strings.Builder
	for i, b := range libBlocks {
		if need[i] {
			sb.WriteString(b.text)
		}
	}
	return sb.String()
}
