package server

// Facts of commands newer than Redis 7.0, which the generated table
// (cmdtable_redis.go, made from redis-server 7.0) cannot know. They are
// written by hand from the later Redis's src/commands/*.json (arity,
// flags, ACL categories, key specs, since) and used by attach when a
// handler registers one of them, so COMMAND INFO and DOCS show them as
// that Redis does. Keep one row per command, in the generated row format.
var laterRedisFacts = []cmdFacts{
	// Redis 7.4: hash field expiry (cmd_hash_ttl.go)
	{"hexpire", -6, "write|denyoom|fast", 1, 1, 1, "write|hash|fast", "", "hash", "7.4.0", "", []keySpec{{"RW|update", bsIndex, 1, "", 0, fkRange, 0, 1, 0}}},
	{"hpexpire", -6, "write|denyoom|fast", 1, 1, 1, "write|hash|fast", "", "hash", "7.4.0", "", []keySpec{{"RW|update", bsIndex, 1, "", 0, fkRange, 0, 1, 0}}},
	{"hexpireat", -6, "write|denyoom|fast", 1, 1, 1, "write|hash|fast", "", "hash", "7.4.0", "", []keySpec{{"RW|update", bsIndex, 1, "", 0, fkRange, 0, 1, 0}}},
	{"hpexpireat", -6, "write|denyoom|fast", 1, 1, 1, "write|hash|fast", "", "hash", "7.4.0", "", []keySpec{{"RW|update", bsIndex, 1, "", 0, fkRange, 0, 1, 0}}},
	{"httl", -5, "readonly|fast", 1, 1, 1, "read|hash|fast", "", "hash", "7.4.0", "", []keySpec{{"RO|access", bsIndex, 1, "", 0, fkRange, 0, 1, 0}}},
	{"hpttl", -5, "readonly|fast", 1, 1, 1, "read|hash|fast", "", "hash", "7.4.0", "", []keySpec{{"RO|access", bsIndex, 1, "", 0, fkRange, 0, 1, 0}}},
	{"hexpiretime", -5, "readonly|fast", 1, 1, 1, "read|hash|fast", "", "hash", "7.4.0", "", []keySpec{{"RO|access", bsIndex, 1, "", 0, fkRange, 0, 1, 0}}},
	{"hpexpiretime", -5, "readonly|fast", 1, 1, 1, "read|hash|fast", "", "hash", "7.4.0", "", []keySpec{{"RO|access", bsIndex, 1, "", 0, fkRange, 0, 1, 0}}},
	{"hpersist", -5, "write|fast", 1, 1, 1, "write|hash|fast", "", "hash", "7.4.0", "", []keySpec{{"RW|update", bsIndex, 1, "", 0, fkRange, 0, 1, 0}}},
	// Redis 8.0
	{"hgetdel", -5, "write|fast", 1, 1, 1, "write|hash|fast", "", "hash", "8.0.0", "", []keySpec{{"RW|access|delete", bsIndex, 1, "", 0, fkRange, 0, 1, 0}}},
	{"hgetex", -5, "write|fast", 1, 1, 1, "write|hash|fast", "", "hash", "8.0.0", "", []keySpec{{"RW|access|update", bsIndex, 1, "", 0, fkRange, 0, 1, 0}}},
	{"hsetex", -6, "write|denyoom|fast", 1, 1, 1, "write|hash|fast", "", "hash", "8.0.0", "", []keySpec{{"RW|update", bsIndex, 1, "", 0, fkRange, 0, 1, 0}}},
}

// laterRedisCommand returns a table entry for name from laterRedisFacts,
// nil when it is not there.
func laterRedisCommand(name string) *command {
	for i := range laterRedisFacts {
		f := &laterRedisFacts[i]
		if f.name != name {
			continue
		}
		cmd := &command{
			name: f.name, arity: f.arity, firstKey: f.first, lastKey: f.last, step: f.step,
			acl: splitList(f.acl), tips: splitList(f.tips), specs: f.specs,
			group: f.group, since: f.since, docFlags: splitList(f.docFlags),
		}
		cmd.setFlags(splitList(f.flags))
		return cmd
	}
	return nil
}
