// Filtering HAProxy's server-state file before a reload: state kept only for
// unchanged servers.

package haproxy

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
)

// Columns of HAProxy's "show servers state" output (format version 1)
// that identify a server: backend name, server name, address, port.
const (
	colBackend = 1
	colServer  = 3
	colAddr    = 4
	colPort    = 18
)

// FilterServerState returns the server-state file HAProxy should load at
// the next reload, from the running worker's "show servers state" dump.
// Entries of other load balancers are kept as they are. Entries of
// load balancer next.Name are kept only for servers that exist in next
// with the same backend, name, address and port AND whose health check is
// unchanged from prev (prev nil = unknown: nothing kept). HAProxy restores
// a saved server's check port, address and state, so a kept entry for a
// server whose check changed would keep checking the old port. next nil
// drops every entry of name (the load balancer is being removed).
func FilterServerState(dump []byte, name string, prev, next *Frontend) []byte {
	keep := map[string]bool{}
	if next != nil && prev != nil && CheckSignature(*prev) == CheckSignature(*next) {
		for _, p := range next.Ports {
			for _, s := range next.Backends {
				keep[BackendName(name, p.Port)+" "+s.Name+" "+s.Address+" "+strconv.Itoa(p.NodePort)] = true
			}
		}
	}
	prefix := "be_" + name + "_"
	var out bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(dump))
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for n := 0; sc.Scan(); n++ {
		line := sc.Text()
		f := strings.Fields(line)
		if n == 0 || strings.HasPrefix(line, "#") || len(f) <= colPort {
			if line != "" {
				out.WriteString(line + "\n")
			}
			continue
		}
		if !strings.HasPrefix(f[colBackend], prefix) || !isOurBackend(f[colBackend], name) {
			out.WriteString(line + "\n")
			continue
		}
		if keep[f[colBackend]+" "+f[colServer]+" "+f[colAddr]+" "+f[colPort]] {
			out.WriteString(line + "\n")
		}
	}
	return out.Bytes()
}

// isOurBackend tells be_<name>_<port> from be_<name>_<other>_<port>, a
// load balancer whose name extends ours.
func isOurBackend(backend, name string) bool {
	rest := strings.TrimPrefix(backend, "be_"+name+"_")
	_, err := strconv.Atoi(rest)
	return err == nil
}
