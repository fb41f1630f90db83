package redisq

// luaCancel cancels a queued, sleeping or running job (see cancelone).
// ARGV: now, channel, id, reason. Returns {'ok', job}, {'notfound'} or
// {'state', state}.
const luaCancel = `
local k = keys(1)
local id = ARGV[3]
local e, w = cancelone(k, id, now_us(), ARGV[4])
if e then return refused(e) end
if w then wake() end
return {'ok', jobout(k, id)}
`

// luaRetry queues a failed or cancelled job again (see retryone). ARGV:
// now, channel, id. Returns {'ok', job}, {'notfound'}, {'state', state}
// or {'conflict'}.
const luaRetry = `
local k = keys(1)
local id = ARGV[3]
local e = retryone(k, id, now_us())
if e then return refused(e) end
wake()
return {'ok', jobout(k, id)}
`

// luaBulk runs one step of a bulk action: it applies the action to every
// job it names, each with the state check and effects of its per-job
// script (cancelone, retryone, deleteone), all in this one call. The jobs
// may be in other queues than the script's where the prefix shares one
// slot, or one node (see kq); the client keeps a step within one queue on
// a cluster with a slot per queue. It reads the records with one HMGET
// per queue, deletes with one HDEL per queue, and publishes the wake-up of
// each queue once, where a per-job script would have. ARGV: now, channel,
// action ('cancel', 'retry' or 'delete'), the reason of a cancel or '1'
// to force a delete, then the queue and id of each job. Returns, per job
// in order, an empty string when it took the action, else 'notfound',
// 'conflict' or the state that refused it.
const luaBulk = `
local k = keys(1)
local now = now_us()
local act, opt = ARGV[3], ARGV[4]
local ks, by, order = {}, {}, {}
for i = 5, #ARGV, 2 do
  local q = ARGV[i]
  if not by[q] then
    by[q], ks[q] = {}, kq(k, q)
    order[#order + 1] = q
  end
  local g = by[q]
  g[#g + 1] = ARGV[i + 1]
end
for _, q in ipairs(order) do fetchk(ks[q], by[q]) end
local out, woke, del = {}, {}, {}
for i = 5, #ARGV, 2 do
  local q, id = ARGV[i], ARGV[i + 1]
  local e, w
  if act == 'cancel' then
    e, w = cancelone(ks[q], id, now, opt)
  elseif act == 'retry' then
    e, w = retryone(ks[q], id, now)
  else
    del[q] = del[q] or {}
    e, w = deleteone(ks[q], id, opt == '1', del[q])
  end
  out[#out + 1] = e or ''
  if w then woke[q] = true end
end
for _, q in ipairs(order) do
  if del[q] and #del[q] > 0 then bulk('HDEL', ks[q].job, del[q]) end
  local ch = ks[q]._ch or ARGV[2]
  if woke[q] and ch ~= '' then redis.call('PUBLISH', ch, '1') end
end
return out
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
