package redisq

// luaCancel cancels a queued, sleeping or running job. ARGV: now, channel,
// id, reason. Returns {'ok', job}, {'notfound'} or {'state', state}.
const luaCancel = `
local k = keys(1)
local now = now_us()
local id = ARGV[3]
local r = get(k, id)
if not r then return {'notfound'} end
if r[RST] == SUCCEEDED or r[RST] == FAILED then return {'state', SN[r[RST]]} end
if r[RST] ~= CANCELLED then
  finish(k, id, r, CANCELLED, now, RUN_CANCELLED, ARGV[4])
  wake()
end
return {'ok', jobout(k, id)}
`

// luaRetry queues a failed or cancelled job again. ARGV: now, channel, id.
// Returns {'ok', job}, {'notfound'} or {'state', state}.
const luaRetry = `
local k = keys(1)
local now = now_us()
local id = ARGV[3]
local r = get(k, id)
if not r then return {'notfound'} end
if r[RST] ~= FAILED and r[RST] ~= CANCELLED then return {'state', SN[r[RST]]} end
setstate(k, id, r, QUEUED)
zrem(k.done, id)
if r[RA] >= r[RMA] then r[RMA] = r[RA] + 1 end
r[RFA], r[RRA] = 0, now
place(k, id, r, now)
setdeadline(k, id, r)
put(id, r)
wake()
return {'ok', jobout(k, id)}
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
local dl = redis.call('ZRANGEBYSCORE', k.dead, '-inf', nows, 'LIMIT', '0', ARGV[3])
fetch(k, dl)
for _, id in ipairs(dl) do
  local r = J[id]
  if r and (r[RST] == QUEUED or r[RST] == RUNNING or r[RST] == SLEEPING) then
    local d, reason = deadline(r)
    if d and now >= d then
      finish(k, id, r, CANCELLED, now, RUN_CANCELLED, reason)
      canc = canc + 1
    else
      setdeadline(k, id, r)
    end
  else
    zrem(k.dead, id)
  end
end
local left = limit - canc
if left > 0 then
  local exp = redis.call('ZRANGEBYSCORE', k.lease, '-inf', nows, 'LIMIT', '0', left)
  fetch(k, exp)
  for _, id in ipairs(exp) do
    local r = J[id]
    if not r or r[RST] ~= RUNNING then
      zrem(k.lease, id)
    elseif r[RA] >= r[RMA] then
      finish(k, id, r, FAILED, now, RUN_LOST, 'lease expired')
      failed = failed + 1
    else
      setstate(k, id, r, QUEUED)
      zrem(k.lease, id)
      closerun(k, r, RUN_LOST, now, 'lease expired')
      r[RRA] = now
      place(k, id, r, now)
      put(id, r)
      req = req + 1
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
local now = now_us()
local before = tonumber(ARGV[3])
local ids = {}
for i = 4, #ARGV do ids[#ids + 1] = ARGV[i] end
fetch(k, ids)
local out = {}
local del = {}
local tasks = {}
for _, id in ipairs(ids) do
  local r = J[id]
  local st = r and r[RST]
  if st and st >= SUCCEEDED and r[RFA] > 0 and r[RFA] < before then
    tasks[r[RT]] = true
    purge(k, id, r, del)
    out[#out + 1] = id
  end
end
if #del > 0 then bulk('HDEL', k.job, del) end
-- rate members older than a second count for nothing; drop those of the
-- tasks seen here, so that a task never enqueued again leaves none behind.
local lo = now - 1000000 + 1
if lo < 0 then lo = 0 end
for task, _ in pairs(tasks) do
  redis.call('ZREMRANGEBYLEX', k.rate, '[' .. task .. '|', '(' .. task .. '|' .. pad(fmt(lo), 18))
end
return out
`
