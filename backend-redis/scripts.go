package redisq

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"regexp"
	"strings"

	"github.com/redis/go-redis/v9"
)

// luaScript is one script and its SHA-1, the name EVALSHA knows it by.
type luaScript struct {
	src  string
	hash string
}

func newScript(body string) *luaScript {
	src := script(body)
	src = luaLibFor(src[len(luaLib):]) + src[len(luaLib):]
	sum := sha1.Sum([]byte(src))
	return &luaScript{src: src, hash: hex.EncodeToString(sum[:])}
}

// The scripts of the backend.
var (
	scriptEnqueue    = newScript(luaEnqueue)
	scriptApply      = newScript(luaApply)
	scriptAbort      = newScript(luaAbort)
	scriptDecide     = newScript(luaDecide)
	scriptClaim      = newScript(luaClaim)
	scriptHeartbeat  = newScript(luaHeartbeat)
	scriptComplete   = newScript(luaComplete)
	scriptFail       = newScript(luaFail)
	scriptSleep      = newScript(luaSleep)
	scriptCheckpoint = newScript(luaCheckpoint)
	scriptCancel     = newScript(luaCancel)
	scriptRetry      = newScript(luaRetry)
	scriptRescue     = newScript(luaRescue)
	scriptCleanup    = newScript(luaCleanup)
)

// allScripts lists every script of the backend.
var allScripts = []*luaScript{scriptEnqueue, scriptApply, scriptAbort, scriptDecide, scriptClaim, scriptHeartbeat,
	scriptComplete, scriptFail, scriptSleep, scriptCheckpoint, scriptCancel, scriptRetry, scriptRescue, scriptCleanup}

// noRetry marks a script call that the client must not send again by
// itself. A call whose reply timed out may still have run on the server, and
// running a transition twice is not what the caller asked for (a second
// claim would take more jobs, a second enqueue would write the batch over
// jobs already claimed); the caller gets the error and decides.
type noRetry struct{ *redis.Cmd }

// NoRetry tells go-redis not to retry the command.
func (noRetry) NoRetry() bool { return true }

// eval runs s with EVALSHA, and with EVAL when the server does not know the
// script yet (after a restart, a failover or SCRIPT FLUSH). A NOSCRIPT reply
// means the script did not run, so sending it again is safe.
func (b *Backend) eval(ctx context.Context, s *luaScript, keys []string, args ...any) (any, error) {
	res, err := b.call(ctx, "evalsha", s.hash, keys, args)
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		res, err = b.call(ctx, "eval", s.src, keys, args)
	}
	return res, err
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
	luaLocal  = regexp.MustCompile(`^local\s+function\s+([A-Za-z_][A-Za-z0-9_]*)|^local\s+([A-Za-z_][A-Za-z0-9_, ]*)=`)
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
