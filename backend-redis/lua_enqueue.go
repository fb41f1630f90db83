package redisq

// luaEnqueue stores a batch of jobs spread over one or more queue groups of
// KEYS (one group per queue, all groups on one node).
//
// ARGV: now, (unused channel), checkOnly, nGroups, then per group: channel;
// nTasks, then per task: task, maxInFlight, maxPerSecond, otherInFlight,
// otherRecent; nItems, then per item the values itemArgs in Enqueue lists.
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
  local task, ik = ARGV[b+2], ARGV[b+8]
  if ik ~= '' then
    local g = ARGV[b]
    local fp = ARGV[b+9]
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

-- pass 2: write
local out = {'ok', nows}
local rec = {}   -- per group: HSET arguments
local rateOf = {} -- per group and task: {first id, count}
for g = 1, ng do rec[g] = {}; rateOf[g] = {} end
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
    local grp = groups[g]
    local k, id, task, ik = grp.k, ARGV[b+1], ARGV[b+2], ARGV[b+8]
    local ra = tonumber(ARGV[b+10])
    if ra < now then ra = now end
    local r = {task, 'queued', tonumber(ARGV[b+4]), 0, tonumber(ARGV[b+5]), ra, now, 0, 0,
      ARGV[b+6], ARGV[b+7], ik, ARGV[b+9], '', 0, 0, '', 0, '', '', 0, 0, '', '', ''}
    place(k, id, r, now)
    if r[RRK] ~= '' then grp.due = true end
    local a = rec[g]
    a[#a + 1] = id
    a[#a + 1] = packed(r)
    a[#a + 1] = id .. '|x'
    a[#a + 1] = ARGV[b+3]
    zadd(k.idx, '0', 's|queued|' .. id)
    zadd(k.idx, '0', 'k|' .. task .. '|' .. id)
    bump(k.cnt, task, 'queued', 1)
    if ik ~= '' then redis.call('HSET', k.idem, ik, id) end
    if hasdeadline(r) then setdeadline(k, id, r) end
    local rt = rateOf[g][task]
    if rt then rt[2] = rt[2] + 1 else rateOf[g][task] = {id, 1} end
    out[#out + 1] = ''
  end
end
for g = 1, ng do
  local k = groups[g].k
  bulk('HSET', k.job, rec[g])
  for task, rt in pairs(rateOf[g]) do
    zadd(k.rate, '0', task .. '|' .. pad(nows, 18) .. '|' .. rt[1] .. '|' .. rt[2])
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
