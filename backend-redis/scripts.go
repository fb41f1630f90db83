package redisq

import "github.com/redis/go-redis/v9"

// The scripts run with EVALSHA and fall back to EVAL when the server does
// not know them yet (redis.Script.Run does both).
var (
	scriptEnqueue    = redis.NewScript(script(luaEnqueue))
	scriptUnenqueue  = redis.NewScript(script(luaUnenqueue))
	scriptClaim      = redis.NewScript(script(luaClaim))
	scriptHeartbeat  = redis.NewScript(script(luaHeartbeat))
	scriptComplete   = redis.NewScript(script(luaComplete))
	scriptFail       = redis.NewScript(script(luaFail))
	scriptSleep      = redis.NewScript(script(luaSleep))
	scriptCheckpoint = redis.NewScript(script(luaCheckpoint))
	scriptCancel     = redis.NewScript(script(luaCancel))
	scriptRetry      = redis.NewScript(script(luaRetry))
	scriptRescue     = redis.NewScript(script(luaRescue))
	scriptCleanup    = redis.NewScript(script(luaCleanup))
)
