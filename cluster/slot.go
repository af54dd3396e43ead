// Package cluster holds the self-contained parts of Redis Cluster: the
// key-to-slot function (CRC16/XMODEM of the key or of its {hash tag}, modulo
// 16384) and the topology a control plane pushes (kvrocks-controller's
// CLUSTERX SETNODES text format), with the queries a node needs to route a
// request. It imports nothing of Damselfly.
//
// Invariants:
//   - A Topology is immutable once built: a change (SETSLOT) makes a new one,
//     so readers on the request path load it through an atomic pointer and
//     never lock.
//   - Every slot has at most one owner, always a primary listed in Nodes.
package cluster

// Slots is the number of hash slots.
const Slots = 16384

// crcTable is CRC16/XMODEM (polynomial 0x1021, initial value 0, no
// reflection), Redis's key hash. It is a constant table, computed once.
var crcTable = func() (t [256]uint16) {
	for i := range t {
		crc := uint16(i) << 8
		for j := 0; j < 8; j++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
		t[i] = crc
	}
	return t
}()

// CRC16 is CRC16/XMODEM of b.
func CRC16(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc = crc<<8 ^ crcTable[byte(crc>>8)^c]
	}
	return crc
}

// HashTag returns the part of key that decides its slot: what lies between
// the first '{' and the next '}' when that is non-empty, else the whole key.
func HashTag(key []byte) []byte {
	for i, c := range key {
		if c == '{' {
			for j := i + 1; j < len(key); j++ {
				if key[j] == '}' {
					if j == i+1 {
						return key
					}
					return key[i+1 : j]
				}
			}
			return key
		}
	}
	return key
}

// KeySlot is the hash slot of key.
func KeySlot(key []byte) int { return int(CRC16(HashTag(key)) & (Slots - 1)) }
