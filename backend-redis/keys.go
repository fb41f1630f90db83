package redisq

// keyspace names every key of one backend. Keys of one queue share the hash
// tag {prefix:queue}, so a script that touches one queue stays in one slot
// of a Redis Cluster. Keys that span queues share the tag {prefix}.
type keyspace struct {
	prefix string
	// oneSlot puts every key of the prefix into the slot of {prefix}
	// (Options.OneSlot): queue keys are then "{prefix}:q:<queue>:<name>".
	oneSlot bool
	// nsFlow keeps the flow state that spans queues (running counts, start
	// windows, task flow limits, the limit gates) in keys of the prefix,
	// "{prefix}:<name>", which every script may touch: on one node, or
	// with oneSlot. On a cluster with a slot per queue they are keys of
	// each queue instead, and the limits that span queues are refused.
	nsFlow bool
}

// nsKeys are the keys of keyNames that hold flow state spanning queues.
var nsKeys = map[string]bool{"flow": true, "tflow": true, "gate": true, "gatet": true}

// tag returns the start of every key of queue.
func (ks keyspace) tag(queue string) string {
	if ks.oneSlot {
		return "{" + ks.prefix + "}:q:" + queue + ":"
	}
	return "{" + ks.prefix + ":" + queue + "}:"
}

// name returns key n of queue.
func (ks keyspace) name(queue string, n string) string {
	if ks.nsFlow && nsKeys[n] {
		return "{" + ks.prefix + "}:" + n
	}
	return ks.tag(queue) + n
}

// keyNames names the keys of a queue, in the order of queueKeys.
var keyNames = []string{"job", "ready", "sched", "lease", "dead", "done", "idx", "idem", "rate", "run", "cp", "cpx", "conf", "rstat", "cnt", "pend", "txn", "flow", "tflow", "gate", "seqh", "seqw", "gatet", "wait", "waitj", "edge"}

// keysOf returns the keys of queue with the indexes in which, in that
// order: the keys a script touches (see keys() in luaLib).
func (ks keyspace) keysOf(queue string, which []int) []string {
	out := make([]string, len(which))
	for i, k := range which {
		out[i] = ks.name(queue, keyNames[k])
	}
	return out
}

// queueKeys returns every key of one queue, in the order of keyNames.
func (ks keyspace) queueKeys(queue string) []string {
	t := ks.tag(queue)
	return []string{
		t + "job",               // hash: "<id>" -> record, "<id>|x" -> cold attributes, every job of the queue
		t + "ready",             // lex zset: "<priority+1000>|<due µs>|<id>", claimable now
		t + "sched",             // zset: id scored by due time, not yet due
		t + "lease",             // zset: id of a running job scored by lease expiry (exactly the running jobs)
		t + "dead",              // zset: id scored by its cancellation deadline
		t + "done",              // zset: id of a terminal job scored by finish time
		t + "idx",               // lex zset: "s|<state>|<id>" (not running) and "k|<task>|<id>", listing and counting
		t + "idem",              // hash: idempotency key -> id
		t + "rate",              // lex zset: "<task>|<created µs>|<first id>|<count>" per enqueue call, last second
		t + "run",               // hash: "<id>|<n>" -> run record, every run but a job's latest (in its record)
		t + "cp",                // hash: "<id>|<step>|v" and "|c" checkpoint values and times
		t + "cpx",               // lex zset: "<id>|<step>" checkpoint index
		t + "conf",              // hash: queue config
		t + "rstat",             // hash: "<task>|<status>" run counts and "<task>|rt" run time
		t + "cnt",               // hash: "<task>|<state>" job counts
		t + "pend",              // hash: "m|<batch>" -> "<coordinator queue>|<prepared µs>", "i|<batch>" -> items: prepared parts of cross-slot batches
		t + "txn",               // hash: "<batch>" -> "<c|a>|<decided µs>|<participant queues>": decisions of the cross-slot batches this queue coordinates
		ks.name(queue, "flow"),  // hash: "t|<task>" and "k|<task>|<key>" running counts (the latter while "~k|<task>" says they are kept), "r|<task>" and "rk|<task>|<key>" start windows, "~ht", "~sweep"
		ks.name(queue, "tflow"), // hash: task -> its flow limits, "<max running>|<per key>|<starts/s>|<starts/s per key>|<hold>"
		ks.name(queue, "gate"),  // lex zset: "<group>#<ready key>#<ready member>#<channel>": jobs a limit holds back
		t + "seqh",              // hash: sequence key -> id of the job at its head
		t + "seqw",              // lex zset: "<sequence key>#<id>": jobs waiting behind their sequence's head
		ks.name(queue, "gatet"), // zset: start-rate gate group by the start of the window that lets its next jobs in
		t + "wait",              // hash: id -> "<token>|<mode>|<until µs>|<cancel children>|<total>|<pending>|<woken>", the latest wait a job began
		t + "waitj",             // hash: id -> the awaited jobs of that wait, "<queue>" and "<id>" each after its 2-byte length
		t + "edge",              // hash: id -> the waits that await the job and have not counted it: "<queue>", "<id>" each after its length, and the token (a double)
	}
}

// Indexes into queueKeys.
const (
	kJob = iota
	kReady
	kSched
	kLease
	kDead
	kDone
	kIdx
	kIdem
	kRate
	kRun
	kCp
	kCpx
	kConf
	kRstat
	kCnt
	kPend
	kTxn
	kFlow
	kTflow
	kGate
	kSeqh
	kSeqw
	kGatet
	kWait
	kWaitj
	kEdge
)

// queues is the set of every queue that has had a job or a config.
func (ks keyspace) queues() string { return "{" + ks.prefix + "}:queues" }

// tasks is the hash of task configs, task -> JSON.
func (ks keyspace) tasks() string { return "{" + ks.prefix + "}:tasks" }

// jobQueue is the hash that maps a job id to its queue.
func (ks keyspace) jobQueue() string { return "{" + ks.prefix + "}:jobq" }

// channel is the pub/sub channel that announces changes of a queue.
func (ks keyspace) channel(queue string) string { return ks.prefix + ":wake:" + queue }
