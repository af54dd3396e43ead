//go:build race

package server

// raceEnabled: the event loop reads and writes through package syscall,
// whose I/O annotations give the race detector the happens-before edge a
// socket write and the matching read establish (as with net.Conn).
const raceEnabled = true
