package redisq

// luaCancel cancels a queued, sleeping or running job. ARGV: now, channel,
// id, reason. Returns {'ok', job}, {'notfound'} or {'state', state}.
const luaCancel = `
local k = keys(1)
local now = now_us()
local id = ARGV[3]
local j = load(k, id)
if not j then return {'notfound'} end
if j.st == 'succeeded' or j.st == 'failed' then return {'state', j.st} end
if j.st ~= 'cancelled' then
  finish(k, j, 'cancelled', now, 'cancelled', ARGV[4])
  wake()
end
return {'ok', jobfields(k, id)}
`

// luaRetry queues a failed or cancelled job again. ARGV: now, channel, id.
// Returns {'ok', job}, {'notfound'} or {'state', state}.
const luaRetry = `
local k = keys(1)
local now = now_us()
local nows = fmt(now)
local id = ARGV[3]
local j = load(k, id)
if not j then return {'notfound'} end
if j.st ~= 'failed' and j.st ~= 'cancelled' then return {'state', j.st} end
setstate(k, j, 'queued')
redis.call('HDEL', k.job, id .. '|fa')
later('ZREM', k.done, id)
local ma = j.ma
if tonumber(j.a) >= tonumber(j.ma) then ma = tonumber(j.a) + 1 end
jset(k, id, 'st', 'queued', 'ma', ma, 'ra', nows, 'rk', place(k, j, nows, now))
setdeadline(k, j)
wake()
flush()
return {'ok', jobfields(k, id)}
`

// luaRescue runs one bounded rescue pass over one queue: first jobs past a
// cancellation deadline are cancelled, then running jobs whose lease
// expired are queued again or failed. ARGV: now, channel, limit. Returns
// {requeued, failed, cancelled}.
const luaRescue = `
local k = keys(1)
local now = now_us()
local nows = fmt(now)
local limit = tonumber(ARGV[3])
local req, failed, canc = 0, 0, 0
local dl = redis.call('ZRANGEBYSCORE', k.dead, '-inf', nows, 'LIMIT', 0, limit)
for _, id in ipairs(dl) do
  local j = load(k, id)
  if j and (j.st == 'queued' or j.st == 'running' or j.st == 'sleeping') then
    local d, reason = deadline(j)
    if d and now >= d then
      finish(k, j, 'cancelled', now, 'cancelled', reason)
      canc = canc + 1
    else
      setdeadline(k, j)
    end
  else
    later('ZREM', k.dead, id)
  end
end
local left = limit - canc
if left > 0 then
  local exp = redis.call('ZRANGEBYSCORE', k.lease, '-inf', nows, 'LIMIT', 0, left)
  for _, id in ipairs(exp) do
    local j = load(k, id)
    if not j or j.st ~= 'running' then
      later('ZREM', k.lease, id)
    elseif tonumber(j.lx) <= now then
      if tonumber(j.a) >= tonumber(j.ma) then
        finish(k, j, 'failed', now, 'lost', 'lease expired')
        failed = failed + 1
      else
        setstate(k, j, 'queued')
        later('ZREM', k.lease, id)
        closerun(k, j, 'lost', now, 'lease expired')
        jset(k, id, 'st', 'queued', 'ra', nows, 'rk', place(k, j, nows, now))
        req = req + 1
      end
    end
  end
end
if req + failed + canc > 0 then wake() end
return {req, failed, canc}
`

// luaCleanup deletes terminal jobs that finished before a time, with their
// runs, checkpoints, index entries and idempotency keys. ARGV: now,
// channel, before (µs), ids... Returns the ids it deleted.
const luaCleanup = `
local k = keys(1)
local before = tonumber(ARGV[3])
local out = {}
for i = 4, #ARGV do
  local id = ARGV[i]
  local v = redis.call('HMGET', k.job, id .. '|st', id .. '|fa', id .. '|t', id .. '|ik', id .. '|ca')
  local st, task = v[1], v[3]
  if (st == 'succeeded' or st == 'failed' or st == 'cancelled') and v[2] and tonumber(v[2]) < before then
    jobdel(k, id)
    later('ZREM', k.idx, 'a|' .. id, 's|' .. st .. '|' .. id, 'k|' .. task .. '|' .. id, 't|' .. task .. '|' .. st .. '|' .. id)
    if set(v[4]) and redis.call('HGET', k.idem, v[4]) == id then redis.call('HDEL', k.idem, v[4]) end
    later('ZREM', k.rate, task .. '|' .. pad(v[5], 18) .. '|' .. id)
    local n = num(redis.call('HGET', k.run, id .. '|n'))
    for r = 1, n do
      local p = id .. '|' .. r .. '|'
      local rv = redis.call('HMGET', k.run, p .. 's', p .. 'b', p .. 'f')
      if rv[1] and rv[1] ~= 'running' then
        bump(k.rstat, task .. '|' .. rv[1], -1)
        if rv[3] then bump(k.rstat, task .. '|rt', tonumber(rv[2]) - tonumber(rv[3])) end
      end
      redis.call('HDEL', k.run, p .. 'i', p .. 'a', p .. 'w', p .. 'k', p .. 's', p .. 'b', p .. 'f', p .. 'e')
    end
    redis.call('HDEL', k.run, id .. '|n')
    local steps = redis.call('ZRANGEBYLEX', k.cpx, '[' .. id .. '|', '(' .. id .. '}')
    for _, s in ipairs(steps) do redis.call('HDEL', k.cp, s .. '|v', s .. '|c') end
    redis.call('ZREMRANGEBYLEX', k.cpx, '[' .. id .. '|', '(' .. id .. '}')
    later('ZREM', k.done, id)
    later('ZREM', k.dead, id)
    later('ZREM', k.lease, id)
    later('ZREM', k.sched, id)
    out[#out + 1] = id
  end
end
return out
`
