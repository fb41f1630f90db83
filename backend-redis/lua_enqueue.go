package redisq

// luaEnqueue stores a batch of jobs spread over one or more queue groups of
// KEYS (one group per queue, all groups on one node).
//
// ARGV: now, (unused channel), checkOnly, nGroups, then per group: channel;
// nTasks, then per task: task, maxInFlight, maxPerSecond, otherInFlight,
// otherRecent; nItems, then per item the values itemArgs in Enqueue lists:
// group, id, task, cold attributes, record head, record middle, run at (µs,
// "0" for now), idempotency key, fingerprint, deadline offset (µs after
// creation, "0" for none) and ready-member prefix ("<priority+1000>|").
//
// The client packs every record (see packRecordParts) but the three values
// that depend on the script's clock, so the script only splices strings and
// sends one bulk command per key; it never builds or packs a record table.
//
// It checks every item first (idempotency keys, then limits) and writes only
// when all pass, so the batch is stored whole or not at all. It returns
// {'ok', now, r1..rn} where ri is "" for a new job or the id of the job an
// item reuses; {'conflict', i}; or {'limited', task, which}.
//
// The rate set holds one member per task and call, "<task>|<created µs, 18
// digits>|<first id>|<count>", so that a batch costs one member however
// large it is; the per-second check sums the counts of the last second.
const luaEnqueue = `
local now = now_us()
local nows = fmt(now)
local checkOnly = ARGV[3] == '1'
local pos = 4
local ng = tonumber(ARGV[pos]); pos = pos + 1
local groups = {}
for g = 1, ng do
  groups[g] = {chan = ARGV[pos], k = keys(g), due = false}
  pos = pos + 1
end
local nt = tonumber(ARGV[pos]); pos = pos + 1
local limits = {}
for i = 1, nt do
  limits[ARGV[pos]] = {mif = tonumber(ARGV[pos+1]), eps = tonumber(ARGV[pos+2]),
    oif = tonumber(ARGV[pos+3]), orate = tonumber(ARGV[pos+4])}
  pos = pos + 5
end
local n = tonumber(ARGV[pos]); pos = pos + 1
local W = 11
local first = pos

-- pass 1: idempotency
local seen = {}
local reuse = {}
local fresh = {}
for i = 1, n do
  local b = first + (i - 1) * W
  local task, ik = ARGV[b+2], ARGV[b+7]
  if ik ~= '' then
    local g = ARGV[b]
    local fp = ARGV[b+8]
    local sk = g .. '|' .. ik
    local s = seen[sk]
    if not s then
      local k = groups[tonumber(g)].k
      local ex = redis.call('HGET', k.idem, ik)
      if ex then
        local r = get(k, ex)
        s = {id = ex, fp = r and r[RFP]}
      end
    end
    if s then
      if s.fp ~= fp then return {'conflict', i} end
      reuse[i] = s.id
    else
      seen[sk] = {id = ARGV[b+1], fp = fp}
    end
  end
  if not reuse[i] then fresh[task] = (fresh[task] or 0) + 1 end
end

-- pass 1: limits
local lo = now - 1000000 + 1
if lo < 0 then lo = 0 end
local los = pad(fmt(lo), 18)
for task, c in pairs(fresh) do
  local l = limits[task]
  if l then
    if l.mif > 0 then
      local active = l.oif
      for g = 1, ng do
        local c = redis.call('HMGET', groups[g].k.cnt, task .. '|queued', task .. '|running', task .. '|sleeping')
        for i = 1, 3 do active = active + tonumber(c[i] or '0') end
      end
      if active + c > l.mif then return {'limited', task, 'max_in_flight'} end
    end
    if l.eps > 0 then
      local recent = l.orate
      for g = 1, ng do
        local ms = redis.call('ZRANGEBYLEX', groups[g].k.rate, '[' .. task .. '|' .. los, '(' .. task .. '}')
        for _, m in ipairs(ms) do
          recent = recent + tonumber(string.match(m, '(%d+)$'))
        end
      end
      if recent + c > l.eps then return {'limited', task, 'max_enqueue_per_second'} end
    end
  end
end
if checkOnly then return {'ok', nows} end

-- pass 2: write. The client packed each record but for its run at, its
-- creation time and its ready member, which depend on the script's clock:
-- record = head .. runAt .. created .. mid .. readyMember .. TAIL.
local out = {'ok', nows}
local T = mpack(now)
local nowp = pad(nows, 18) .. '|'
local TAIL = '\0\160\0\0\160\160\160'
local RKH = {}
local rec, ready, sched, idx, dead, idem, cnt = {}, {}, {}, {}, {}, {}, {}
local rateOf = {} -- per group and task: {first id, count}
for g = 1, ng do
  rec[g], ready[g], sched[g], idx[g], dead[g], idem[g], cnt[g], rateOf[g] = {}, {}, {}, {}, {}, {}, {}, {}
end
for task, _ in pairs(fresh) do
  for g = 1, ng do
    redis.call('ZREMRANGEBYLEX', groups[g].k.rate, '[' .. task .. '|', '(' .. task .. '|' .. los)
  end
end
for i = 1, n do
  if reuse[i] then
    out[#out + 1] = reuse[i]
  else
    local b = first + (i - 1) * W
    local g = tonumber(ARGV[b])
    local id, task, ik, ras = ARGV[b+1], ARGV[b+2], ARGV[b+7], ARGV[b+6]
    local a = rec[g]
    local na = #a
    a[na + 1] = id
    a[na + 3] = id .. '|x'
    a[na + 4] = ARGV[b+3]
    if ras == '0' or tonumber(ras) <= now then
      local m = ARGV[b+10] .. nowp .. id
      local h = RKH[#m]
      if not h then
        if #m < 32 then h = string.char(160 + #m) else h = string.sub(mpack(m), 1, -#m - 1) end
        RKH[#m] = h
      end
      a[na + 2] = ARGV[b+4] .. T .. T .. ARGV[b+5] .. h .. m .. TAIL
      local r = ready[g]
      r[#r + 1] = '0'
      r[#r + 1] = m
      groups[g].due = true
    else
      a[na + 2] = ARGV[b+4] .. mpack(tonumber(ras)) .. T .. ARGV[b+5] .. '\160' .. TAIL
      local s = sched[g]
      s[#s + 1] = ras
      s[#s + 1] = id
    end
    local x = idx[g]
    local nx = #x
    x[nx + 1] = '0'
    x[nx + 2] = 's|queued|' .. id
    x[nx + 3] = '0'
    x[nx + 4] = 'k|' .. task .. '|' .. id
    cnt[g][task] = (cnt[g][task] or 0) + 1
    if ik ~= '' then
      local e = idem[g]
      e[#e + 1] = ik
      e[#e + 1] = id
    end
    local dl = ARGV[b+9]
    if dl ~= '0' then
      local d = dead[g]
      d[#d + 1] = fmt(now + tonumber(dl))
      d[#d + 1] = id
    end
    local rt = rateOf[g][task]
    if rt then rt[2] = rt[2] + 1 else rateOf[g][task] = {id, 1} end
    out[#out + 1] = ''
  end
end
for g = 1, ng do
  local k = groups[g].k
  bulk('HSET', k.job, rec[g])
  if #ready[g] > 0 then bulk('ZADD', k.ready, ready[g]) end
  if #sched[g] > 0 then bulk('ZADD', k.sched, sched[g]) end
  if #idx[g] > 0 then bulk('ZADD', k.idx, idx[g]) end
  if #dead[g] > 0 then bulk('ZADD', k.dead, dead[g]) end
  if #idem[g] > 0 then bulk('HSET', k.idem, idem[g]) end
  for task, c in pairs(cnt[g]) do bump(k.cnt, task, 'queued', c) end
  for task, rt in pairs(rateOf[g]) do
    zadd(k.rate, '0', task .. '|' .. nowp .. rt[1] .. '|' .. rt[2])
  end
  if g > 1 then flush(k) end
end
for g = 1, ng do
  if groups[g].due and groups[g].chan ~= '' then redis.call('PUBLISH', groups[g].chan, '1') end
end
return out
`

// luaUnenqueue removes jobs that an Enqueue on Redis Cluster wrote to one
// queue before a later queue of the same batch refused its part. A job that
// a worker already claimed is left alone. ARGV: now, channel, ids...
const luaUnenqueue = `
local k = keys(1)
local ids = {}
for i = 3, #ARGV do ids[#ids + 1] = ARGV[i] end
fetch(k, ids)
local removed = 0
local del = {}
for _, id in ipairs(ids) do
  local r = J[id]
  if r and r[RST] == 'queued' and r[RLT] == 0 then
    local task = r[RT]
    unschedule(k, id, r)
    if hasdeadline(r) then zrem(k.dead, id) end
    zrem(k.idx, 's|queued|' .. id)
    zrem(k.idx, 'k|' .. task .. '|' .. id)
    bump(k.cnt, task, 'queued', -1)
    if set(r[RIK]) and redis.call('HGET', k.idem, r[RIK]) == id then redis.call('HDEL', k.idem, r[RIK]) end
    J[id] = false
    del[#del + 1] = id
    del[#del + 1] = id .. '|x'
    removed = removed + 1
  end
end
if #del > 0 then bulk('HDEL', k.job, del) end
return removed
`
