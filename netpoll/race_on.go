//go:build race

package netpoll

// raceEnabled: reads and writes go through package syscall, whose I/O
// annotations give the race detector the happens-before edge a socket write
// and the matching read establish (as with net.Conn).
const raceEnabled = true
