package harness

import (
	"fmt"
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

// Process is one process found by ProcessesUnder.
type Process struct {
	PID  int
	Args []string
}

func (p Process) String() string { return fmt.Sprintf("%d %s", p.PID, strings.Join(p.Args, " ")) }

// ProcessesUnder returns this machine's processes that belong to a work
// dir: whose working directory is dir or beneath it, or whose environment
// names a workspace beneath it (TFCCM_WORKSPACE, which tfccm gives every
// tofu command and tofu passes on to the providers it starts).
func ProcessesUnder(dir string) []Process {
	under := func(p string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }
	procs, _ := filepath.Glob("/proc/[0-9]*")
	var out []Process
	for _, d := range procs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil || len(cmdline) == 0 { // gone, or a zombie
			continue
		}
		cwd, _ := os.Readlink(filepath.Join(d, "cwd"))
		env, _ := os.ReadFile(filepath.Join(d, "environ"))
		ws := ""
		for _, kv := range strings.Split(string(env), "\x00") {
			if v, ok := strings.CutPrefix(kv, "TFCCM_WORKSPACE="); ok {
				ws = v
			}
		}
		if under(strings.TrimSuffix(cwd, " (deleted)")) || (ws != "" && under(ws)) {
			out = append(out, Process{PID: pid, Args: strings.Split(strings.TrimSuffix(string(cmdline), "\x00"), "\x00")})
		}
	}
	return out
}
