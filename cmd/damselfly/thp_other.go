//go:build !linux

package main

import "log/slog"

// disableTHP is a no-op: transparent huge pages are a Linux notion.
func disableTHP(*slog.Logger) {}
