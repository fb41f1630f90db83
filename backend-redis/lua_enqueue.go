package redisq

// luaEnqueue stores a batch of jobs spread over one or more queue groups of
// KEYS (one group per queue, all groups on one node).
//
// ARGV: now, (unused channel), checkOnly, nGroups, then per group: channel;
// nTasks, then per task: task, maxInFlight, maxPerSecond, otherInFlight,
// otherRecent; nItems, then per item the fields listed in enqueueItemFields.
//
// It checks every item first (idempotency keys, then limits) and writes only
// when all pass, so the batch is stored whole or not at all. It returns
// {'ok', now, r1..rn} where ri is "" for a new job or the id of the job an
// item reuses; {'conflict', i}; or {'limited', task, which}.
const luaEnqueue = `
local now = now_us()
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
local W = 14
local items = {}
for i = 1, n do
  local b = pos + (i - 1) * W
  items[i] = {g = tonumber(ARGV[b]), id = ARGV[b+1], t = ARGV[b+2], p = ARGV[b+3], h = ARGV[b+4],
    pr = ARGV[b+5], ma = ARGV[b+6], rp = ARGV[b+7], md = ARGV[b+8], mu = ARGV[b+9],
    ik = ARGV[b+10], fp = ARGV[b+11], ac = ARGV[b+12], ra = ARGV[b+13]}
end

-- pass 1: idempotency
local seen = {}
local fresh = {}
for i, it in ipairs(items) do
  if it.ik ~= '' then
    local sk = it.g .. '|' .. it.ik
    local s = seen[sk]
    if not s then
      local k = groups[it.g].k
      local ex = redis.call('HGET', k.idem, it.ik)
      if ex then
        s = {id = ex, fp = redis.call('HGET', k.job, ex .. '|fp')}
      end
    end
    if s then
      if s.fp ~= it.fp then return {'conflict', i} end
      it.reuse = s.id
    else
      seen[sk] = {id = it.id, fp = it.fp}
    end
  end
  if not it.reuse then fresh[it.t] = (fresh[it.t] or 0) + 1 end
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
        for _, st in ipairs({'queued', 'running', 'sleeping'}) do
          local p = 't|' .. task .. '|' .. st
          active = active + redis.call('ZLEXCOUNT', groups[g].k.idx, '[' .. p .. '|', '(' .. p .. '}')
        end
      end
      if active + c > l.mif then return {'limited', task, 'max_in_flight'} end
    end
    if l.eps > 0 then
      local recent = l.orate
      for g = 1, ng do
        recent = recent + redis.call('ZLEXCOUNT', groups[g].k.rate, '[' .. task .. '|' .. los, '(' .. task .. '}')
      end
      if recent + c > l.eps then return {'limited', task, 'max_enqueue_per_second'} end
    end
  end
end
if checkOnly then return {'ok', fmt(now)} end

-- pass 2: write
local nows = fmt(now)
local out = {'ok', nows}
for task, _ in pairs(fresh) do
  for g = 1, ng do
    redis.call('ZREMRANGEBYLEX', groups[g].k.rate, '[' .. task .. '|', '(' .. task .. '|' .. los)
  end
end
for i, it in ipairs(items) do
  if it.reuse then
    out[#out + 1] = it.reuse
  else
    local grp = groups[it.g]
    local k, id = grp.k, it.id
    local ra = it.ra
    if tonumber(ra) < now then ra = nows end
    local j = {id = id, pr = it.pr, md = it.md, mu = it.mu, ca = nows}
    local rk = place(k, j, ra, now)
    if rk ~= '' then grp.due = true end
    jset(k, id, 't', it.t, 'p', it.p, 'h', it.h, 'pr', it.pr, 'st', 'queued', 'a', '0', 'ma', it.ma,
      'rp', it.rp, 'md', it.md, 'mu', it.mu, 'ik', it.ik, 'fp', it.fp, 'ac', it.ac, 'ra', ra,
      'ca', nows, 'lt', '0', 'rk', rk)
    later('ZADD', k.idx, 0, 'a|' .. id, 0, 's|queued|' .. id, 0, 'k|' .. it.t .. '|' .. id,
      0, 't|' .. it.t .. '|queued|' .. id)
    if it.ik ~= '' then redis.call('HSET', k.idem, it.ik, id) end
    setdeadline(k, j)
    later('ZADD', k.rate, 0, it.t .. '|' .. pad(nows, 18) .. '|' .. id)
    out[#out + 1] = ''
  end
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
local removed = 0
for i = 3, #ARGV do
  local j = load(k, ARGV[i])
  if j and j.st == 'queued' and num(j.lt) == 0 then
    local id, task = j.id, j.t
    unschedule(k, j)
    if hasdeadline(j) then later('ZREM', k.dead, id) end
    later('ZREM', k.idx, 'a|' .. id, 's|queued|' .. id, 'k|' .. task .. '|' .. id, 't|' .. task .. '|queued|' .. id)
    if set(j.ik) and redis.call('HGET', k.idem, j.ik) == id then redis.call('HDEL', k.idem, j.ik) end
    later('ZREM', k.rate, task .. '|' .. pad(j.ca, 18) .. '|' .. id)
    jobdel(k, id)
    removed = removed + 1
  end
end
return removed
`
