package server

// command is one entry of the command table (cmdtable.go): a command or a
// subcommand ("parent|sub").
type command struct {
	name     string
	arity    int // Redis convention: n exact, -n at least n
	flags    []string
	firstKey int
	lastKey  int
	step     int
	acl      []string  // ACL categories, without '@'
	tips     []string  // command tips
	specs    []keySpec // key specs: where the keys are
	group    string
	since    string
	docFlags []string // "deprecated", "syscmd"
	summary  string   // our own one-line description (cmdtable_docs.go)

	// Derived from the flags.
	noAuth   bool // allowed before AUTH
	write    bool
	denyOOM  bool // refused while used memory is over maxmemory
	noScript bool // refused from scripts
	noMulti  bool // refused inside MULTI
	blocking bool

	// Damselfly's properties (x- registration tokens, cmdtable.go).
	mayBlock      bool // never run on an event loop (Client.mayBlock)
	blockOption   bool // blocks only when given BLOCK (blockOptionGiven)
	txPass        bool // runs at once inside MULTI instead of being queued
	dataless      bool // no key arguments, yet touches no data
	allShards     bool // needs every shard held
	ownLocks      bool // locks or waits itself: never run holding shards
	pubsubContext bool // allowed to a RESP2 subscriber
	randCount     bool // a huge negative count (SRANDMEMBER...) runs off the event loop
	fieldArg      bool // the argument after the key is a field or member (prefetch hint)
	lockAll       bool // EXEC must hold every shard to run it (settle)

	redis  bool                // Redis 7.0 has it (facts generated)
	reg    *registration       // what the handler file registered (nil: none)
	parent *command            // the container of a subcommand
	subs   map[string]*command // subcommands by lower-case name
	fn     func(c *Client, args [][]byte)

	// ACL (acl.go): the command's id in the ACL catalog, the key access
	// each key spec needs (aclNotKey: not a key), its channel arguments.
	aclID    int32
	aclPerms []uint8
	aclChans uint8
	// Observability (cmdstats.go): counters, and the Redis flags that
	// SLOWLOG, MONITOR and the latency monitor read.
	stats                                 *cmdStats
	fast, admin, skipMonitor, skipSlowlog bool
}

// registration is what a reg call said, kept to check it against Redis's
// facts.
type registration struct {
	arity             int
	flags             []string
	first, last, step int
	group             string
}

// commandTable builds the table: Redis's facts, then every handler file's
// registrations. It returns the implemented commands by name.
func commandTable() map[string]*command {
	return buildCommandTable().finish()
}

func buildCommandTable() *cmdTable {
	t := newCmdTable()
	reg := t.attach
	registerConnection(reg)
	registerServer(reg)
	registerStrings(reg)
	registerKeys(reg)
	registerPersistence(reg)
	registerAOF(reg)
	registerDump(reg)
	registerMigrate(reg) // migrate.go
	registerPubSub(reg)
	registerMulti(reg)
	registerScripting(reg)
	registerReplication(reg)
	registerLists(reg)
	registerHashes(reg)
	registerSets(reg)
	registerZSets(reg)
	registerStreams(reg)
	registerBitmaps(reg)
	registerHyperLogLog(reg)
	registerGeo(reg)
	registerSort(reg)
	registerLCS(reg)
	registerACL(reg)
	registerSlowlog(reg) // slowlog.go
	registerLatency(reg) // latency.go
	registerMonitor(reg) // monitor.go
	registerCluster(reg)
	t.addDocs()
	return t
}

type registrar = func(name string, arity int, flags string, first, last, step int, group string, fn func(*Client, [][]byte))
