package redisq

// luaClaim promotes due scheduled, retried and sleeping jobs into the ready
// set and claims up to limit of them in (priority, due time, id) order, in
// one call. Due jobs past a cancellation deadline are cancelled on the way
// and do not count. ARGV: now, channel, worker, limit, ttl (µs). A run's id
// is "<job id>.<token>": tokens grow by one per claim, so no two runs share
// one, and the client need not send an id for every job it might claim.
// It returns {'ok', now, lease expiry, job...} where each job is {id,
// record, cold}.
//
// The ready set's members all score 0, so its rank order is its
// lexicographic order: the head is read with ZRANGE by rank and removed with
// ZREMRANGEBYRANK, O(log n + limit) however long the backlog.
const luaClaim = `
local k = keys(1)
local now = now_us()
local nows = fmt(now)
local worker, limit, ttl = ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5])
local lx = now + ttl
local out = {'ok', nows, fmt(lx)}
local qc = redis.call('HMGET', k.conf, 'paused', 'max_running')
if qc[1] == '1' then return out end
-- the queue's limit: a claim never takes more than the room left
local qmax = tonumber(qc[2] or '0')
if qmax > 0 then
  local room = qmax - redis.call('ZCARD', k.lease)
  if room <= 0 then return out end
  if room < limit then limit = room end
end
-- the task limits: only tasks with flow limits have an entry in tflow
local flowon = redis.call('HLEN', k.tflow) > 0
local FC, RC, RW, RWD = {}, {}, {}, {}
local sec = math.floor(now / 1000000)
if flowon then admitdue(k, now) end
local function limitsof(task)
  local c = FC[task]
  if c == nil then
    c = false
    local v = redis.call('HGET', k.tflow, task)
    if v then
      local a, b, c3, d = string.match(v, '^(%d+)|(%d+)|(%d+)|(%d+)')
      c = {tonumber(a), tonumber(b), tonumber(c3), tonumber(d)}
    end
    FC[task] = c
  end
  return c
end
-- running counts as stored, plus this claim's (a task's group), or as
-- stored (a key's group, read only when needed: see takes)
local function running(f)
  local v = RC[f]
  if v == nil then
    v = tonumber(redis.call('HGET', k.flow, f) or '0')
    RC[f] = v
  end
  return v
end
-- KD counts this claim's starts per task and key: KD[task][key]
local KD = {}
-- readall reads the running counts of the fields f in one HMGET.
local function readall(f)
  if #f == 0 then return end
  local v = hmget(k.flow, f)
  for i, fl in ipairs(f) do RC[fl] = tonumber(v[i] or '0') end
end
-- prefetch reads the running counts of the tasks of the jobs ids that
-- have limits and that this claim has not read yet, in one HMGET; then
-- those of their keys, in one more, but only for a task whose key counts
-- are kept (see KEYED) and whose count could reach its per-key limit
-- within the page: a key never runs more jobs than its task, so below
-- that its count is not needed
local function prefetch(ids)
  local f = {}
  for _, id in ipairs(ids) do
    local r = J[id]
    if r and limitsof(r[RT]) then
      local tg = tpre(r[RT])
      if RC[tg] == nil then RC[tg] = 0; f[#f + 1] = tg end
    end
  end
  readall(f)
  f = {}
  for _, id in ipairs(ids) do
    local r = J[id]
    local c = r and limitsof(r[RT])
    local lk = r and r[RLK]
    if c and c[2] > 0 and lk and lk ~= '' and RC[tpre(r[RT])] + #ids >= c[2] and keyed(k.flow, r[RT]) then
      local kg = kpre(r[RT]) .. '|' .. lk
      if RC[kg] == nil then RC[kg] = 0; f[#f + 1] = kg end
    end
  end
  readall(f)
end
-- starts in the current second, as stored plus this claim's
local function starts(f)
  local v = RW[f]
  if v == nil then
    v = 0
    local w = redis.call('HGET', k.flow, f)
    if w then
      local ws, n = string.match(w, '^(%d+):(%d+)$')
      ws = tonumber(ws)
      -- a claim whose clock is behind a window already counted starts
      -- nothing under that rate: its own window's count is gone
      if ws == sec then v = tonumber(n) elseif ws > sec then v = math.huge end
    end
    RW[f] = v
  end
  return v
end
-- keycount returns the running jobs of a task's key, as stored plus this
-- claim's starts (KD). A task whose key counts are not kept yet starts
-- keeping them (see keepkeys): this claim's earlier starts of the task,
-- which no count took, then go into the counts.
local function keycount(task, lk)
  if not keyed(k.flow, task) then
    local kp = kpre(task)
    for key, c in pairs(keepkeys(k, task)) do RC[kp .. '|' .. key] = c end
    for key, d in pairs(KD[task] or {}) do bump(k.flow, kp, key, d) end
  end
  return running(kpre(task) .. '|' .. lk) + ((KD[task] or {})[lk] or 0)
end
-- takes reports whether job id may start now under its task's limits,
-- and counts it when it may. A job held by a concurrency limit goes into
-- the gate of its group, which lets it back when the group frees a slot;
-- one held by a start rate waits in its gate for the next window.
local function takes(id, r)
  local task = r[RT]
  local c = limitsof(task)
  if not c then return true end
  local tg = tpre(task)
  local lk = r[RLK]
  if lk == '' then lk = nil end
  local t = running(tg)
  local kr
  if lk and c[4] > 0 then kr = 'rk|' .. task .. '|' .. lk end
  local rd
  if c[1] > 0 and t >= c[1] then
    rd = 2
  elseif lk and c[2] > 0 and t >= c[2] and keycount(task, lk) >= c[2] then
    -- while its task's count t is below c[2], so is the key's: not read
    rd = 4
  elseif c[3] > 0 and starts('r|' .. task) >= c[3] then
    rd = 5
  elseif kr and starts(kr) >= c[4] then
    rd = 6
  end
  if rd then
    r[RRD] = rd
    local g = gategroup(r, rd)
    zadd(k.gate, '0', gatemember(k, id, r, g))
    -- a start rate lets its group in again when the next window begins
    if rd >= 5 then zadd(k.gatet, fmt((sec + 1) * 1000000), g) end
    put(id, r)
    return false
  end
  RC[tg] = t + 1
  if lk then
    local kd = KD[task]
    if not kd then kd = {}; KD[task] = kd end
    kd[lk] = (kd[lk] or 0) + 1
  end
  -- start windows are kept for the rates that are set
  if c[3] > 0 then
    RW['r|' .. task] = starts('r|' .. task) + 1
    RWD['r|' .. task] = true
  end
  if kr then
    RW[kr] = starts(kr) + 1
    RWD[kr] = true
  end
  return true
end

local due = redis.call('ZRANGEBYSCORE', k.sched, '-inf', nows, 'LIMIT', '0', 5000 + limit)
if #due > 0 then
  fetch(k, due)
  for _, id in ipairs(due) do
    local r = J[id]
    if r and (r[RST] == QUEUED or r[RST] == SLEEPING) and r[RRD] == 0 then
      zadd(k.ready, '0', readykey(id, r[RPR], r[RRA]))
      r[RRD] = 1
      put(id, r)
    end
  end
  bulk('ZREM', k.sched, due)
  flush(k)
end

local got = 0
local cancelled = false
local claimed = {}
-- Members this script puts back into the ready set are written at flush,
-- after the loop, so a ZRANGE that returns fewer members than it asked for
-- has emptied the set: the loop then ends without asking again.
local more = true
while more and got < limit do
  local want = limit - got
  local ms = redis.call('ZRANGE', k.ready, '0', want - 1)
  if #ms == 0 then break end
  more = #ms == want
  redis.call('ZREMRANGEBYRANK', k.ready, '0', #ms - 1)
  local ids = {}
  for i, m in ipairs(ms) do ids[i] = string.sub(m, 25) end
  fetch(k, ids)
  if flowon then prefetch(ids) end
  for i, m in ipairs(ms) do
    local id = ids[i]
    local r = J[id]
    local rd = r and r[RRD]
    if r and (r[RST] == QUEUED or r[RST] == SLEEPING) and rd ~= 0 and rd ~= 3 then
      r[RRD] = 0
      if r[RRA] > now then
        place(k, id, r, now)
        put(id, r)
      else
        local d, reason = deadline(r)
        if d and now >= d then
          finish(k, id, r, CANCELLED, now, RUN_CANCELLED, reason)
          cancelled = true
        elseif flowon and not takes(id, r) then
          -- held back: passed over
        else
          spill(k, id, r)
          if r[RST] ~= SLEEPING then r[RA] = r[RA] + 1 end
          local tok = r[RLT] + 1
          r[RLT], r[RLW] = tok, worker
          r[RRN], r[RRS], r[RRB], r[RRF], r[RRE] = r[RRN] + 1, RUN_RUNNING, now, 0, ''
          if r[RFS] == 0 then
            r[RFS] = now
            local old = r[RDL]
            r[RDL] = r[RMU] > 0 and now + r[RMU] or 0
            if old > 0 or r[RDL] > 0 then setdeadline(k, id, r) end
          end
          setstate(k, id, r, RUNNING)
          zadd(k.lease, fmt(lx), id)
          put(id, r)
          got = got + 1
          claimed[got] = id
        end
      end
    end
  end
end
if next(RWD) then
  local w = {}
  for f, _ in pairs(RWD) do
    w[#w + 1] = f
    w[#w + 1] = sformat('%.0f', sec) .. ':' .. sformat('%.0f', RW[f])
  end
  redis.call('HSET', k.flow, unpack(w))
  -- start windows of keys no longer used go: each claim that counts
  -- starts sweeps a few fields of the hash, from where the last one
  -- stopped (its cursor in field '~sweep'), and deletes the windows that
  -- ended a minute ago (as the SQL stores keep them)
  local sw = redis.call('HSCAN', k.flow, redis.call('HGET', k.flow, '~sweep') or '0', 'COUNT', '16')
  local del, fv = {}, sw[2]
  for i = 1, #fv, 2 do
    local f = fv[i]
    if string.sub(f, 1, 2) == 'r|' or string.sub(f, 1, 3) == 'rk|' then
      local ws = tonumber(string.match(fv[i + 1], '^(%d+):'))
      if ws and ws < sec - 60 then del[#del + 1] = f end
    end
  end
  if sw[1] == '0' then del[#del + 1] = '~sweep' end
  if #del > 0 then flowdel(k.flow, del) end
  if sw[1] ~= '0' then
    redis.call('HSET', k.flow, '~sweep', sw[1])
  end
end
if got > 0 then
  local x = fetch(k, claimed, true)
  for i, id in ipairs(claimed) do
    local pk = packed(J[id])
    P[id] = pk
    out[#out + 1] = {id, pk, x[i]}
  end
end
if cancelled then wake() end
return out
`

// luaHeartbeat extends a lease. ARGV: now, channel, id, token, ttl (µs).
// Returns {'ok', expiresAt, worker}, {'lost'} or {'lost', reason} when the
// job passed its deadline and was cancelled.
const luaHeartbeat = `
local k = keys(1)
local now = now_us()
local id = ARGV[3]
local r = fence(k, id, ARGV[4])
if not r then return {'lost'} end
local d, reason = deadline(r)
if d and now >= d then
  finish(k, id, r, CANCELLED, now, RUN_CANCELLED, reason)
  wake()
  return {'lost', reason}
end
-- The lease expiry lives in the lease set only: a heartbeat writes no
-- record.
local lx = now + tonumber(ARGV[5])
zadd(k.lease, fmt(lx), id)
return {'ok', fmt(lx), r[RLW]}
`

// luaComplete completes a batch of jobs of one queue. ARGV: now, channel,
// then (id, token, result) per item. Returns {'ok', now, 1|0 per item}.
const luaComplete = `
local k = keys(1)
local now = now_us()
local out = {'ok', fmt(now)}
local ids = {}
for i = 3, #ARGV, 3 do ids[#ids + 1] = ARGV[i] end
fetch(k, ids)
local any = false
for i = 3, #ARGV, 3 do
  local id = ARGV[i]
  local r = fence(k, id, ARGV[i + 1])
  if r then
    finish(k, id, r, SUCCEEDED, now, RUN_SUCCEEDED, nil, ARGV[i + 2])
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
const luaFail = `
local k = keys(1)
local now = now_us()
local id, err = ARGV[3], ARGV[5]
local r = fence(k, id, ARGV[4])
if not r then return {'lost'} end
if ARGV[7] == '1' or r[RA] >= r[RMA] then
  finish(k, id, r, FAILED, now, RUN_FAILED, err)
  wake()
  return {'ok', 'failed'}
end
local ra = tonumber(ARGV[6])
if ra < now then ra = now end
setstate(k, id, r, QUEUED)
zrem(k.lease, id)
closerun(k, r, RUN_FAILED, now, err)
r[RLE], r[RRA] = err, ra
place(k, id, r, now)
put(id, r)
if r[RRD] == 1 then wake() end
return {'ok', 'queued'}
`

// luaSleep parks a running job until a time. ARGV: now, channel, id,
// token, until (µs). Returns {'ok'} or {'lost'}.
const luaSleep = `
local k = keys(1)
local now = now_us()
local id = ARGV[3]
local r = fence(k, id, ARGV[4])
if not r then return {'lost'} end
local ra = tonumber(ARGV[5])
if ra < now then ra = now end
setstate(k, id, r, SLEEPING)
zrem(k.lease, id)
closerun(k, r, RUN_SLEEPING, now, nil)
r[RRA] = ra
place(k, id, r, now)
put(id, r)
if r[RRD] == 1 then wake() end
return {'ok'}
`

// luaCheckpoint stores a step's value unless one is stored. ARGV: now,
// channel, id, token, step, value. Returns {'ok', value, createdAt} or
// {'lost'}.
const luaCheckpoint = `
local k = keys(1)
local now = now_us()
local id, step = ARGV[3], ARGV[5]
if not fence(k, id, ARGV[4]) then return {'lost'} end
local f = id .. '|' .. step
local v = redis.call('HMGET', k.cp, f .. '|v', f .. '|c')
if v[1] then return {'ok', v[1], v[2]} end
redis.call('HSET', k.cp, f .. '|v', ARGV[6], f .. '|c', fmt(now))
redis.call('ZADD', k.cpx, '0', f)
return {'ok', ARGV[6], fmt(now)}
`
