package harness

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Processes returns the IDs of this machine's processes whose command line
// (argv, as in /proc/PID/cmdline) match accepts. Processes that exit while
// they are read are skipped.
func Processes(match func(args []string) bool) []int {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var out []int
	for _, p := range procs {
		cmdline, err := os.ReadFile(p)
		if err != nil || len(cmdline) == 0 {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if err == nil && match(strings.Split(strings.TrimSuffix(string(cmdline), "\x00"), "\x00")) {
			out = append(out, pid)
		}
	}
	return out
}
