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
