package redisq

// luaClaim promotes due scheduled, retried and sleeping jobs into the ready
// set and claims up to limit of them in (priority, due time, id) order, in
// one call. Due jobs past a cancellation deadline are cancelled on the way
// and do not count. ARGV: now, channel, worker, limit, ttl (µs), run ids...
// It returns {'ok', now, job...} where each job is {id, fields...}.
const luaClaim = luaLib + `
local k = keys(1)
local now = now_us()
local nows = fmt(now)
local worker, limit, ttl = ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5])
local out = {'ok', nows}
if redis.call('HGET', k.conf, 'paused') == '1' then return out end

local due = redis.call('ZRANGEBYSCORE', k.sched, '-inf', nows, 'LIMIT', 0, 5000 + limit)
for _, id in ipairs(due) do
  local v = redis.call('HMGET', k.job, id .. '|st', id .. '|pr', id .. '|ra')
  if v[1] == 'queued' or v[1] == 'sleeping' then
    schedule(k, id, v[2], v[3], now)
  else
    redis.call('ZREM', k.sched, id)
  end
end

local got, ri = 0, 6
local cancelled = false
while got < limit do
  local ms = redis.call('ZRANGEBYLEX', k.ready, '-', '+', 'LIMIT', 0, limit - got)
  if #ms == 0 then break end
  for _, m in ipairs(ms) do
    redis.call('ZREM', k.ready, m)
    local id = string.sub(m, 25)
    local v = redis.call('HMGET', k.job, id .. '|st', id .. '|ra', id .. '|t', id .. '|a', id .. '|lt', id .. '|fs', id .. '|pr', id .. '|rk')
    local st, task = v[1], v[3]
    if v[8] == m then redis.call('HDEL', k.job, id .. '|rk') end
    if (st == 'queued' or st == 'sleeping') and v[8] == m then
      if tonumber(v[2]) > now then
        schedule(k, id, v[7], v[2], now)
      else
        local d, reason = deadline(k, id)
        if d and now >= d then
          finish(k, id, task, st, 'cancelled', now, 'cancelled', reason)
          cancelled = true
        else
          local att = tonumber(v[4])
          if st ~= 'sleeping' then att = att + 1 end
          local tok = (tonumber(v[5]) or 0) + 1
          local lx = fmt(now + ttl)
          redis.call('HSET', k.job, id .. '|a', att, id .. '|lt', tok, id .. '|lw', worker, id .. '|lx', lx)
          if not v[6] or v[6] == '' then
            redis.call('HSET', k.job, id .. '|fs', nows)
          end
          setstate(k, id, task, st, 'running')
          setdeadline(k, id)
          redis.call('ZADD', k.lease, lx, id)
          openrun(k, id, task, ARGV[ri], att, worker, tok, now)
          ri = ri + 1
          got = got + 1
          out[#out + 1] = jobfields(k, id)
        end
      end
    end
  end
end
if cancelled then wake() end
return out
`

// luaHeartbeat extends a lease. ARGV: now, channel, id, token, ttl (µs).
// Returns {'ok', expiresAt, worker}, {'lost'} or {'lost', reason} when the
// job passed its deadline and was cancelled.
const luaHeartbeat = luaLib + `
local k = keys(1)
local now = now_us()
local id = ARGV[3]
local task = fence(k, id, ARGV[4])
if not task then return {'lost'} end
local d, reason = deadline(k, id)
if d and now >= d then
  finish(k, id, task, 'running', 'cancelled', now, 'cancelled', reason)
  wake()
  return {'lost', reason}
end
local lx = fmt(now + tonumber(ARGV[5]))
redis.call('HSET', k.job, id .. '|lx', lx)
redis.call('ZADD', k.lease, lx, id)
return {'ok', lx, redis.call('HGET', k.job, id .. '|lw')}
`

// luaComplete completes a batch of jobs of one queue. ARGV: now, channel,
// then (id, token, result) per item. Returns {'ok', now, 1|0 per item}.
const luaComplete = luaLib + `
local k = keys(1)
local now = now_us()
local out = {'ok', fmt(now)}
local any = false
for i = 3, #ARGV, 3 do
  local id = ARGV[i]
  local task = fence(k, id, ARGV[i + 1])
  if task then
    redis.call('HSET', k.job, id .. '|r', ARGV[i + 2])
    finish(k, id, task, 'running', 'succeeded', now, 'succeeded', nil)
    out[#out + 1] = 1
    any = true
  else
    out[#out + 1] = 0
  end
end
if any then wake() end
return out
`

// luaFail ends a run with an error. ARGV: now, channel, id, token, error,
// retryAt (µs, 0 for now), terminal ('1' or '0'). Returns {'ok', state} or
// {'lost'}.
const luaFail = luaLib + `
local k = keys(1)
local now = now_us()
local id, err = ARGV[3], ARGV[5]
local task = fence(k, id, ARGV[4])
if not task then return {'lost'} end
local v = redis.call('HMGET', k.job, id .. '|a', id .. '|ma', id .. '|pr')
if ARGV[7] == '1' or tonumber(v[1]) >= tonumber(v[2]) then
  finish(k, id, task, 'running', 'failed', now, 'failed', err)
  wake()
  return {'ok', 'failed'}
end
local ra = ARGV[6]
if tonumber(ra) < now then ra = fmt(now) end
setstate(k, id, task, 'running', 'queued')
redis.call('HSET', k.job, id .. '|le', err, id .. '|ra', ra)
redis.call('ZREM', k.lease, id)
closerun(k, id, task, 'failed', now, err)
if schedule(k, id, v[3], ra, now) then wake() end
return {'ok', 'queued'}
`

// luaSleep parks a running job until a time. ARGV: now, channel, id,
// token, until (µs). Returns {'ok'} or {'lost'}.
const luaSleep = luaLib + `
local k = keys(1)
local now = now_us()
local id = ARGV[3]
local task = fence(k, id, ARGV[4])
if not task then return {'lost'} end
local ra = ARGV[5]
if tonumber(ra) < now then ra = fmt(now) end
setstate(k, id, task, 'running', 'sleeping')
redis.call('HSET', k.job, id .. '|ra', ra)
redis.call('ZREM', k.lease, id)
closerun(k, id, task, 'sleeping', now, nil)
if schedule(k, id, redis.call('HGET', k.job, id .. '|pr'), ra, now) then wake() end
return {'ok'}
`

// luaCheckpoint stores a step's value unless one is stored. ARGV: now,
// channel, id, token, step, value. Returns {'ok', value, createdAt} or
// {'lost'}.
const luaCheckpoint = luaLib + `
local k = keys(1)
local now = now_us()
local id, step = ARGV[3], ARGV[5]
if not fence(k, id, ARGV[4]) then return {'lost'} end
local f = id .. '|' .. step
local v = redis.call('HMGET', k.cp, f .. '|v', f .. '|c')
if v[1] then return {'ok', v[1], v[2]} end
redis.call('HSET', k.cp, f .. '|v', ARGV[6], f .. '|c', fmt(now))
redis.call('ZADD', k.cpx, 0, f)
return {'ok', ARGV[6], fmt(now)}
`
