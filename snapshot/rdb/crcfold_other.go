//go:build !amd64 || purego

package rdb

// crcUpdate adds p to crc. Without the amd64 assembly (other architectures,
// or the purego build tag, which keeps this path tested on amd64) it is the
// table CRC.
func crcUpdate(crc uint64, p []byte) uint64 { return crcTable(crc, p) }
