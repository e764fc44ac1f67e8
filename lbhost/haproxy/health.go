// Reading the servers' health from HAProxy's `show servers state` output.

package haproxy

import (
	"bufio"
	"bytes"
	"sort"
	"strconv"
	"strings"
)

// More columns of "show servers state" (format 1): the server's
// operational state (0 stopped, 1 starting, 2 running, 3 stopping) and its
// administrative state (bit flags; 0x1-0x4 put it in maintenance).
const (
	colOpState    = 5
	colAdminState = 6
)

const (
	opRunning  = 2
	adminMaint = 0x1 | 0x2 | 0x4 // forced, inherited, from the configuration
)

// ServerHealth is one server (a node) of a load balancer as the running
// HAProxy sees it, over every port's backend.
type ServerHealth struct {
	Name    string
	Address string
	// Healthy: running and not in maintenance in every backend of the
	// load balancer (each port has one).
	Healthy bool
}

// ParseServerHealth returns the servers of load balancer name from a
// "show servers state" dump, sorted by name. A server counts as healthy
// only when it is up in every one of the load balancer's backends.
func ParseServerHealth(dump []byte, name string) []ServerHealth {
	byName := map[string]*ServerHealth{}
	prefix := "be_" + name + "_"
	sc := bufio.NewScanner(bytes.NewReader(dump))
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for n := 0; sc.Scan(); n++ {
		line := sc.Text()
		f := strings.Fields(line)
		if n == 0 || strings.HasPrefix(line, "#") || len(f) <= colPort {
			continue
		}
		if !strings.HasPrefix(f[colBackend], prefix) || !isOurBackend(f[colBackend], name) {
			continue
		}
		op, err1 := strconv.Atoi(f[colOpState])
		admin, err2 := strconv.Atoi(f[colAdminState])
		up := err1 == nil && err2 == nil && op == opRunning && admin&adminMaint == 0
		s := byName[f[colServer]]
		if s == nil {
			s = &ServerHealth{Name: f[colServer], Address: f[colAddr], Healthy: true}
			byName[s.Name] = s
		}
		s.Healthy = s.Healthy && up
	}
	out := make([]ServerHealth, 0, len(byName))
	for _, s := range byName {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
