package redisq

import "github.com/redis/go-redis/v9"

// The scripts run with EVALSHA and fall back to EVAL when the server does
// not know them yet (redis.Script.Run does both).
var (
	scriptEnqueue    = redis.NewScript(luaEnqueue)
	scriptUnenqueue  = redis.NewScript(luaUnenqueue)
	scriptClaim      = redis.NewScript(luaClaim)
	scriptHeartbeat  = redis.NewScript(luaHeartbeat)
	scriptComplete   = redis.NewScript(luaComplete)
	scriptFail       = redis.NewScript(luaFail)
	scriptSleep      = redis.NewScript(luaSleep)
	scriptCheckpoint = redis.NewScript(luaCheckpoint)
	scriptCancel     = redis.NewScript(luaCancel)
	scriptRetry      = redis.NewScript(luaRetry)
	scriptRescue     = redis.NewScript(luaRescue)
	scriptCleanup    = redis.NewScript(luaCleanup)
)
