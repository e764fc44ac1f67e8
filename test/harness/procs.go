package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
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

// clockTick is the kernel's USER_HZ, the unit of /proc/PID/stat's times
// (100 on every Linux architecture Go supports).
const clockTick = 10 * time.Millisecond

// CPU is a process's CPU time: its own (user + system) and that of its
// children it waited for (tofu and the providers tofu started, for the
// CCM).
type CPU struct {
	Own, Children time.Duration
}

// Sub is c - o, the CPU used between two readings.
func (c CPU) Sub(o CPU) CPU { return CPU{Own: c.Own - o.Own, Children: c.Children - o.Children} }

// ProcessCPU reads pid's CPU times from /proc/PID/stat.
func ProcessCPU(pid int) (CPU, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return CPU{}, err
	}
	// The command name (field 2) is in parentheses and may hold spaces;
	// the fields after its closing one start with the state (field 3).
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return CPU{}, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return CPU{}, fmt.Errorf("/proc/%d/stat: %d fields after the command name", pid, len(f))
	}
	var ticks [4]int64 // utime, stime, cutime, cstime: fields 14-17
	for k := range ticks {
		if ticks[k], err = strconv.ParseInt(f[11+k], 10, 64); err != nil {
			return CPU{}, fmt.Errorf("/proc/%d/stat: field %d: %w", pid, 14+k, err)
		}
	}
	return CPU{Own: time.Duration(ticks[0]+ticks[1]) * clockTick, Children: time.Duration(ticks[2]+ticks[3]) * clockTick}, nil
}
