package server

import (
	"errors"
	"strconv"
)

// parseConfigInt parses an integer CONFIG SET value that must lie in
// [min, max], with Redis 7.0's error texts for the two ways it can fail.
func parseConfigInt(v string, min, max int64) (int64, error) {
	n, ok := parseInt([]byte(v))
	if !ok {
		return 0, errors.New("argument couldn't be parsed into an integer")
	}
	if n < min || n > max {
		return 0, errors.New("argument must be between " + strconv.FormatInt(min, 10) + " and " + strconv.FormatInt(max, 10) + " inclusive")
	}
	return n, nil
}

// parseConfigMemory parses a memory CONFIG SET value (1mb, 1073741824...)
// that must be at least min, with Redis 7.0's error texts.
func parseConfigMemory(v string, min int64) (int64, error) {
	n, err := ParseMemory(v)
	if err != nil || n < 0 {
		return 0, errors.New("argument must be a memory value")
	}
	if n < min {
		return 0, errors.New("argument must be between " + strconv.FormatInt(min, 10) + " and 9223372036854775807 inclusive")
	}
	return n, nil
}
