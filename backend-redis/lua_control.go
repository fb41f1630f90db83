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

// luaRetry queues a failed or cancelled job again. A job whose key holds
// while active takes its idempotency key again, unless another job holds
// it by then. A job of a sequence gets back in line (see seqenter). ARGV:
// now, channel, id. Returns {'ok', job}, {'notfound'}, {'state', state} or
// {'conflict'}.
const luaRetry = `
local k = keys(1)
local now = now_us()
local id = ARGV[3]
local r = get(k, id)
if not r then return {'notfound'} end
if r[RST] ~= FAILED and r[RST] ~= CANCELLED then return {'state', SN[r[RST]]} end
if r[RUQ] == 1 and r[RIK] ~= '' then
  local v = redis.call('HGET', k.idem, r[RIK])
  if v and string.sub(v, 1, #id + 1) == id .. ':' then
    local c2 = string.find(v, ':', #id + 2, true)
    if c2 then redis.call('HSET', k.idem, r[RIK], string.sub(v, 1, c2 - 1)) end
  else
    local held = false
    if v then
      if string.find(v, '|', 1, true) then
        held = true -- reserved by a prepared part of a batch
      else
        local c1 = string.find(v, ':', 1, true)
        local c2 = string.find(v, ':', c1 + 1, true)
        held = not c2 or now < tonumber(string.sub(v, c2 + 1))
      end
    end
    if held then return {'conflict'} end
    local fp = select(7, munpack(redis.call('HGET', k.job, id .. '|x')))
    redis.call('HSET', k.idem, r[RIK], id .. ':' .. fp)
  end
end
setstate(k, id, r, QUEUED)
zrem(k.done, id)
if r[RA] >= r[RMA] then r[RMA] = r[RA] + 1 end
r[RFA], r[RRA] = 0, now
if r[RSK] and r[RSK] ~= '' then seqenter(k, id, r, now) else place(k, id, r, now) end
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
admitdue(k, now)
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
