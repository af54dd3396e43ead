// Package difftest is a differential fuzzer: it generates random command
// sequences over every data type (strings, keys and expiry, lists, hashes,
// sets, sorted sets, streams; valid and invalid arguments, edge values,
// MULTI/EXEC with WATCH, blocking commands, several connections), plays
// each against an in-process Damselfly and a real redis-server 7.0 side by
// side, and compares the replies byte for byte.
//
// It is all test code: run it with
//
//	go test ./difftest                              # a few seconds
//	DIFFTEST_DURATION=1h go test ./difftest -timeout 0 -run Differential -v
//	DIFFTEST_SEED=123 DIFFTEST_ONE=1 go test ./difftest -run Differential -v
//
// Invariants: a sequence is a pure function of its seed (gen.go); each
// sequence starts from FLUSHALL and fresh connections, so a failing seed
// replays alone; a divergence is shrunk to a minimal sequence before it is
// printed. The replies that may differ by design (order of hash-table
// iteration, randomness, timing) are normalized in one place,
// differences_test.go, which lists each with its reason; everything else
// must match exactly.
package difftest
