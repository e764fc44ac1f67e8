package haproxy

import (
	"reflect"
	"testing"
)

// serversStateDump is a "show servers state" dump of load balancer
// c1_lb-a (two ports), c1_lb-a_x and other.
const serversStateDump = `1
# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight srv_iweight srv_time_since_last_change srv_check_status srv_check_result srv_check_health srv_check_state srv_agent_state bk_f_forced_id srv_f_forced_id srv_fqdn srv_port srvrecord srv_use_ssl srv_check_port srv_check_addr srv_agent_addr srv_agent_port
3 be_c1_lb-a_80 1 node-a 10.250.0.11 2 0 1 1 5 6 3 4 6 0 0 0 - 30080 - 0 10256 - - 0
3 be_c1_lb-a_80 2 node-b 10.250.0.12 2 1 1 1 5 6 3 4 6 0 0 0 - 30080 - 0 10256 - - 0
3 be_c1_lb-a_80 3 node-c 10.250.0.13 2 0 1 1 5 6 3 4 6 0 0 0 - 30080 - 0 10256 - - 0
4 be_c1_lb-a_443 1 node-a 10.250.0.11 0 0 1 1 5 6 3 0 6 0 0 0 - 30443 - 0 10256 - - 0
4 be_c1_lb-a_443 2 node-b 10.250.0.12 2 1 1 1 5 6 3 4 6 0 0 0 - 30443 - 0 10256 - - 0
4 be_c1_lb-a_443 3 node-c 10.250.0.13 2 0 1 1 5 6 3 4 6 0 0 0 - 30443 - 0 10256 - - 0
5 be_c1_lb-a_x_80 1 node-d 10.250.0.14 0 0 1 1 5 6 3 4 6 0 0 0 - 30081 - 0 10256 - - 0
6 be_other_80 1 node-e 10.250.0.15 0 0 1 1 5 6 3 4 6 0 0 0 - 30090 - 0 10256 - - 0
`

func TestParseServerHealth(t *testing.T) {
	// node-a is up on port 80 and down on 443 (unhealthy), node-b in
	// maintenance, node-c up on both; other load balancers are ignored.
	dump := serversStateDump
	got := ParseServerHealth([]byte(dump), "c1_lb-a")
	want := []ServerHealth{
		{Name: "node-a", Address: "10.250.0.11", Healthy: false},
		{Name: "node-b", Address: "10.250.0.12", Healthy: false},
		{Name: "node-c", Address: "10.250.0.13", Healthy: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if got := ParseServerHealth([]byte(dump), "absent"); len(got) != 0 {
		t.Errorf("absent load balancer: %+v", got)
	}
}
