package server

// addDocs gives the entries their summaries (our own words; facts such as
// group and since come from Redis with the rest of cmdtable_redis.go).
func (t *cmdTable) addDocs() {
	for name, s := range cmdSummaries {
		if cmd := t.all[name]; cmd != nil {
			cmd.summary = s
		}
	}
}

// cmdSummaries is the docs column of the command table: one line per
// command or subcommand, in Damselfly's words.
var cmdSummaries = map[string]string{}
