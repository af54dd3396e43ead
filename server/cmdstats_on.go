//go:build !nocmdstats

package server

// cmdStatsCompiled keeps per-command counters; the nocmdstats build tag
// compiles them out, only to measure what they cost (BENCHMARKS.md).
const cmdStatsCompiled = true
