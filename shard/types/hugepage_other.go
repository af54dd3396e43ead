//go:build !linux

package types

// adviseHugePages is a no-op: transparent huge pages are a Linux notion.
func adviseHugePages([]byte) {}
