package redisq

// luaAwait parks a running job on other jobs (see core.Awaiter and the
// fan-in helpers of luaLib). ARGV: now, channel, id, token, the job's
// queue, mode ('all' or 'any'), wake at (µs), until (µs, 0 for none),
// cancel children ('1' or '0'), the awaited jobs as "waitj" holds them.
// Returns {'ok', pending, woken (1|0)}, {'lost'} or {'notfound', id}; on
// the last two nothing changed.
const luaAwait = `
local k = keys(1)
local now = now_us()
local id = ARGV[3]
local r = fence(k, id, ARGV[4])
if not r then return {'lost'} end
local qs, ids = awjobs(ARGV[10])
local order, by = awgroups(qs, ids)
for _, q in ipairs(order) do fetchk(kq(k, q), by[q]) end
local pending = 0
for _, cid in ipairs(ids) do
  local cr = J[cid]
  if not cr then return {'notfound', cid} end
  if cr[RST] < SUCCEEDED then pending = pending + 1 end
end
-- a new wait replaces the job's last one, edges and all
awdrop(k, id)
local tok, me = r[RLT], ARGV[5]
local e = spack('>Hc0Hc0d', #me, me, #id, id, tok)
for _, q in ipairs(order) do
  local ck = kq(k, q)
  local g = {}
  for _, cid in ipairs(by[q]) do
    if J[cid][RST] < SUCCEEDED then g[#g + 1] = cid end
  end
  if #g > 0 then
    local vs = hmget(ck.edge, g)
    local set = {}
    for n, cid in ipairs(g) do
      set[#set + 1] = cid
      set[#set + 1] = (vs[n] or '') .. e
    end
    bulk('HSET', ck.edge, set)
  end
end
local w = {tok, ARGV[6], ARGV[8], ARGV[9], #ids, pending, '0'}
local sat = satisfied(w)
if sat then w[7] = '1' end
redis.call('HSET', k.wait, id, waitformat(w))
redis.call('HSET', k.waitj, id, ARGV[10])
-- parked as Sleep parks a job: the run ends, no attempt is spent
setstate(k, id, r, SLEEPING)
zrem(k.lease, id)
closerun(k, r, RUN_SLEEPING, now, nil)
local ra = tonumber(ARGV[7])
if sat or ra < now then ra = now end
r[RRA] = ra
place(k, id, r, now)
put(id, r)
if r[RRD] == 1 then wake() end
return {'ok', pending, sat and 1 or 0}
`
