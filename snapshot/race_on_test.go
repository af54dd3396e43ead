//go:build race

package snapshot

// raceEnabled: the race detector slows every goroutine several-fold, so
// tests that bound scheduling delays skip.
const raceEnabled = true
