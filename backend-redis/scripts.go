package redisq

import (
	"context"
	"crypto/sha1"
	"encoding/hex"

	"github.com/redis/go-redis/v9"
)

// luaScript is one script and its SHA-1, the name EVALSHA knows it by.
type luaScript struct {
	src  string
	hash string
}

func newScript(body string) *luaScript {
	src := script(body)
	sum := sha1.Sum([]byte(src))
	return &luaScript{src: src, hash: hex.EncodeToString(sum[:])}
}

// The scripts of the backend.
var (
	scriptEnqueue    = newScript(luaEnqueue)
	scriptUnenqueue  = newScript(luaUnenqueue)
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
