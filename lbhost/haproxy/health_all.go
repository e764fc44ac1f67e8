// Every load balancer's servers from one `show servers state` dump.

package haproxy

import (
	"bufio"
	"bytes"
	"sort"
	"strconv"
	"strings"
)

// ParseAllServerHealth returns the servers of every load balancer in a
// "show servers state" dump, by load balancer name (its backends are
// be_<name>_<port>), each sorted by server name: what ParseServerHealth
// returns for each name, in one pass over the dump (the health round
// reads a host's load balancers at once).
func ParseAllServerHealth(dump []byte) map[string][]ServerHealth {
	byLB := map[string]map[string]*ServerHealth{}
	sc := bufio.NewScanner(bytes.NewReader(dump))
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for n := 0; sc.Scan(); n++ {
		line := sc.Text()
		f := strings.Fields(line)
		if n == 0 || strings.HasPrefix(line, "#") || len(f) <= colPort {
			continue
		}
		name, ok := backendLB(f[colBackend])
		if !ok {
			continue
		}
		op, err1 := strconv.Atoi(f[colOpState])
		admin, err2 := strconv.Atoi(f[colAdminState])
		up := err1 == nil && err2 == nil && op == opRunning && admin&adminMaint == 0
		servers := byLB[name]
		if servers == nil {
			servers = map[string]*ServerHealth{}
			byLB[name] = servers
		}
		s := servers[f[colServer]]
		if s == nil {
			s = &ServerHealth{Name: f[colServer], Address: f[colAddr], Healthy: true}
			servers[s.Name] = s
		}
		s.Healthy = s.Healthy && up
	}
	out := make(map[string][]ServerHealth, len(byLB))
	for name, servers := range byLB {
		list := make([]ServerHealth, 0, len(servers))
		for _, s := range servers {
			list = append(list, *s)
		}
		sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
		out[name] = list
	}
	return out
}

// backendLB is the load balancer name of backend be_<name>_<port>.
func backendLB(backend string) (string, bool) {
	rest, ok := strings.CutPrefix(backend, "be_")
	if !ok {
		return "", false
	}
	i := strings.LastIndexByte(rest, '_')
	if i <= 0 {
		return "", false
	}
	if _, err := strconv.Atoi(rest[i+1:]); err != nil {
		return "", false
	}
	return rest[:i], true
}
