package redisq

// luaCancel cancels a queued, sleeping or running job. ARGV: now, channel,
// id, reason. Returns {'ok', job}, {'notfound'} or {'state', state}.
const luaCancel = luaLib + `
local k = keys(1)
local now = now_us()
local id = ARGV[3]
local v = redis.call('HMGET', k.job, id .. '|st', id .. '|t')
local st, task = v[1], v[2]
if not st then return {'notfound'} end
if st == 'succeeded' or st == 'failed' then return {'state', st} end
if st ~= 'cancelled' then
  finish(k, id, task, st, 'cancelled', now, 'cancelled', ARGV[4])
  wake()
end
return {'ok', jobfields(k, id)}
`

// luaRetry queues a failed or cancelled job again. ARGV: now, channel, id.
// Returns {'ok', job}, {'notfound'} or {'state', state}.
const luaRetry = luaLib + `
local k = keys(1)
local now = now_us()
local id = ARGV[3]
local v = redis.call('HMGET', k.job, id .. '|st', id .. '|t', id .. '|a', id .. '|ma', id .. '|pr')
local st, task = v[1], v[2]
if not st then return {'notfound'} end
if st ~= 'failed' and st ~= 'cancelled' then return {'state', st} end
local nows = fmt(now)
setstate(k, id, task, st, 'queued')
redis.call('HDEL', k.job, id .. '|fa')
redis.call('ZREM', k.done, id)
if tonumber(v[3]) >= tonumber(v[4]) then
  redis.call('HSET', k.job, id .. '|ma', tonumber(v[3]) + 1)
end
redis.call('HSET', k.job, id .. '|ra', nows)
schedule(k, id, v[5], nows, now)
setdeadline(k, id)
wake()
return {'ok', jobfields(k, id)}
`

// luaRescue runs one bounded rescue pass over one queue. ARGV: now,
// channel, limit. Returns {requeued, failed, cancelled}.
const luaRescue = luaLib + `
local k = keys(1)
local now = now_us()
local nows = fmt(now)
local limit = tonumber(ARGV[3])
local req, failed, canc = 0, 0, 0
local exp = redis.call('ZRANGEBYSCORE', k.lease, '-inf', nows, 'LIMIT', 0, limit)
for _, id in ipairs(exp) do
  local v = redis.call('HMGET', k.job, id .. '|st', id .. '|lx', id .. '|t', id .. '|a', id .. '|ma', id .. '|pr')
  local st, task = v[1], v[3]
  if st ~= 'running' then
    redis.call('ZREM', k.lease, id)
  elseif tonumber(v[2]) <= now then
    local d, reason = deadline(k, id)
    if d and now >= d then
      finish(k, id, task, 'running', 'cancelled', now, 'cancelled', reason)
      canc = canc + 1
    elseif tonumber(v[4]) >= tonumber(v[5]) then
      finish(k, id, task, 'running', 'failed', now, 'lost', 'lease expired')
      failed = failed + 1
    else
      setstate(k, id, task, 'running', 'queued')
      redis.call('HSET', k.job, id .. '|ra', nows)
      redis.call('ZREM', k.lease, id)
      closerun(k, id, task, 'lost', now, 'lease expired')
      schedule(k, id, v[6], nows, now)
      req = req + 1
    end
  end
end
local left = limit - req - failed - canc
if left > 0 then
  local dl = redis.call('ZRANGEBYSCORE', k.dead, '-inf', nows, 'LIMIT', 0, left)
  for _, id in ipairs(dl) do
    local v = redis.call('HMGET', k.job, id .. '|st', id .. '|t')
    local st, task = v[1], v[2]
    if st == 'queued' or st == 'running' or st == 'sleeping' then
      local d, reason = deadline(k, id)
      if d and now >= d then
        finish(k, id, task, st, 'cancelled', now, 'cancelled', reason)
        canc = canc + 1
      else
        setdeadline(k, id)
      end
    else
      redis.call('ZREM', k.dead, id)
    end
  end
end
if req + failed + canc > 0 then wake() end
return {req, failed, canc}
`

// luaCleanup deletes terminal jobs that finished before a time, with their
// runs, checkpoints, index entries and idempotency keys. ARGV: now,
// channel, before (µs), ids... Returns the ids it deleted.
const luaCleanup = luaLib + `
local k = keys(1)
local before = tonumber(ARGV[3])
local out = {}
for i = 4, #ARGV do
  local id = ARGV[i]
  local v = redis.call('HMGET', k.job, id .. '|st', id .. '|fa', id .. '|t', id .. '|ik', id .. '|ca')
  local st, task = v[1], v[3]
  if (st == 'succeeded' or st == 'failed' or st == 'cancelled') and v[2] and tonumber(v[2]) < before then
    local args = {k.job}
    for j, f in ipairs(F) do args[j + 1] = id .. '|' .. f end
    args[#args + 1] = id .. '|rk'
    redis.call('HDEL', unpack(args))
    redis.call('ZREM', k.idx, 'a|' .. id, 's|' .. st .. '|' .. id, 'k|' .. task .. '|' .. id, 't|' .. task .. '|' .. st .. '|' .. id)
    if v[4] and v[4] ~= '' and redis.call('HGET', k.idem, v[4]) == id then redis.call('HDEL', k.idem, v[4]) end
    redis.call('ZREM', k.rate, task .. '|' .. pad(v[5], 18) .. '|' .. id)
    local n = tonumber(redis.call('HGET', k.run, id .. '|n') or '0')
    for r = 1, n do
      local p = id .. '|' .. r .. '|'
      local rv = redis.call('HMGET', k.run, p .. 's', p .. 'b', p .. 'f')
      if rv[1] then
        redis.call('HINCRBY', k.rstat, task .. '|' .. rv[1], -1)
        if rv[3] then redis.call('HINCRBY', k.rstat, task .. '|rt', fmt(tonumber(rv[2]) - tonumber(rv[3]))) end
      end
      redis.call('HDEL', k.run, p .. 'i', p .. 'a', p .. 'w', p .. 'k', p .. 's', p .. 'b', p .. 'f', p .. 'e')
    end
    redis.call('HDEL', k.run, id .. '|n')
    local steps = redis.call('ZRANGEBYLEX', k.cpx, '[' .. id .. '|', '(' .. id .. '}')
    for _, s in ipairs(steps) do redis.call('HDEL', k.cp, s .. '|v', s .. '|c') end
    redis.call('ZREMRANGEBYLEX', k.cpx, '[' .. id .. '|', '(' .. id .. '}')
    redis.call('ZREM', k.done, id)
    redis.call('ZREM', k.dead, id)
    redis.call('ZREM', k.lease, id)
    redis.call('ZREM', k.sched, id)
    out[#out + 1] = id
  end
end
return out
`
