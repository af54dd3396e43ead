//go:build nocmdstats

package server

// cmdStatsCompiled: see cmdstats_on.go.
const cmdStatsCompiled = false
