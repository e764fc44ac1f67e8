package haproxy

import (
	"strings"
	"testing"
)

// A "show servers state" dump (format 1) with two servers of c1_lb-a port
// 80, one of another load balancer whose name extends ours, and one of an
// unrelated load balancer.
const dump = `1
# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight srv_iweight srv_time_since_last_change srv_check_status srv_check_result srv_check_health srv_check_state srv_agent_state bk_f_forced_id srv_f_forced_id srv_fqdn srv_port srvrecord srv_use_ssl srv_check_port srv_check_addr srv_agent_addr srv_agent_port
3 be_c1_lb-a_80 1 node-a 10.250.0.11 2 0 1 1 5 6 3 4 6 0 0 0 - 30080 - 0 10256 - - 0
3 be_c1_lb-a_80 2 node-b 10.250.0.12 0 0 1 1 5 6 3 0 6 0 0 0 - 30080 - 0 10256 - - 0
4 be_c1_lb-a_x_80 1 node-a 10.250.0.11 2 0 1 1 5 6 3 4 6 0 0 0 - 30081 - 0 10256 - - 0
5 be_other_80 1 node-a 10.250.0.11 2 0 1 1 5 6 3 4 6 0 0 0 - 30090 - 0 10256 - - 0
`

func servers(out []byte) []string {
	var s []string
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) > 3 && !strings.HasPrefix(l, "#") {
			s = append(s, f[1]+"/"+f[3])
		}
	}
	return s
}

func TestFilterServerState(t *testing.T) {
	base := Frontend{Name: "c1_lb-a", Address: "10.252.0.7", Ports: []Port{{80, 30080}},
		Backends:    []Backend{{"node-a", "10.250.0.11"}, {"node-b", "10.250.0.12"}},
		HealthCheck: HealthCheck{Protocol: "HTTP", Port: 10256, Path: "/healthz", Interval: "1s", Rise: 2, Fall: 2}}
	others := []string{"be_c1_lb-a_x_80/node-a", "be_other_80/node-a"}
	etpLocal := base
	etpLocal.HealthCheck.Port = 31234
	moved := base
	moved.Backends = []Backend{{"node-a", "10.250.0.11"}, {"node-b", "10.250.0.99"}}
	nodePort := base
	nodePort.Ports = []Port{{80, 30999}}
	for _, tc := range []struct {
		name       string
		prev, next *Frontend
		want       []string
	}{
		{"unchanged keeps all", &base, &base, append([]string{"be_c1_lb-a_80/node-a", "be_c1_lb-a_80/node-b"}, others...)},
		{"check port changed (ETP Local) drops ours", &base, &etpLocal, others},
		{"moved server dropped", &base, &moved, append([]string{"be_c1_lb-a_80/node-a"}, others...)},
		{"node port changed drops ours", &base, &nodePort, others},
		{"unknown previous drops ours", nil, &base, others},
		{"removed drops ours", &base, nil, others},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := FilterServerState([]byte(dump), "c1_lb-a", tc.prev, tc.next)
			if !strings.HasPrefix(string(out), "1\n# be_id") {
				t.Errorf("header lost:\n%s", out)
			}
			if got := servers(out); strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("kept %v, want %v", got, tc.want)
			}
		})
	}
}
