package server

import (
	"fmt"
	"time"

	"github.com/damselflydb/damselfly/snapshot"
)

// saveWaits is the "DB saved" log line's account of what the save cost
// writers (snapshot.Stats): the longest pre-change hook run and traversal
// lock hold (a writer of that shard waited at most about their sum), the
// number and mean of each, the time hooks waited for the memory budget, and
// the waits for the budget by who waited: connections at the writer gate
// holding nothing (writergate.go), hooks and dropping writers with their
// shard locked (the last resort).
func saveWaits(st snapshot.Stats) string {
	mean := func(total time.Duration, n int64) time.Duration {
		if n == 0 {
			return 0
		}
		return (total / time.Duration(n)).Round(time.Microsecond)
	}
	return fmt.Sprintf("hook max %v (%v without budget waits) mean %v n %d; hold max %v mean %v n %d; hook budget wait %v; "+
		"budget waits: conn (unlocked) %v, hook (locked) %v, drop (locked) %v; waits by cause: %v",
		st.HookMax.Round(time.Microsecond), st.HookWorkMax.Round(time.Microsecond), mean(st.HookTotal, st.Hooks), st.Hooks,
		st.HoldMax.Round(time.Microsecond), mean(st.HoldTotal, st.Holds), st.Holds,
		st.HookBudgetWait.Round(time.Microsecond), st.ConnBudget, st.HookBudget, st.DropBudget, st.Waits)
}
