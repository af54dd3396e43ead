package server

import (
	"errors"
	"os"
	"sort"
	"strconv"
	"strings"
)

// SavePoint is one "seconds changes" pair of the save schedule.
type SavePoint struct {
	Seconds int64
	Changes int64
}

// ParseSaveSchedule parses Redis's save syntax: "3600 1 300 100"; "" disables.
func ParseSaveSchedule(s string) ([]SavePoint, error) {
	f := strings.Fields(s)
	if len(f)%2 != 0 {
		return nil, errors.New("Invalid save parameters")
	}
	var out []SavePoint
	for i := 0; i < len(f); i += 2 {
		sec, err1 := strconv.ParseInt(f[i], 10, 64)
		ch, err2 := strconv.ParseInt(f[i+1], 10, 64)
		if err1 != nil || err2 != nil || sec < 1 || ch < 0 {
			return nil, errors.New("Invalid save parameters")
		}
		out = append(out, SavePoint{sec, ch})
	}
	return out, nil
}

func checkDir(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return errors.New("not a directory: " + dir)
	}
	return nil
}

func sortStrings(s []string) { sort.Strings(s) }
