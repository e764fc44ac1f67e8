package announce

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tfccm/tfccm/lbhost/router"
)

// fakeHost is the host's routes of protocol Proto: local (table local)
// and announced (table main).
type fakeHost struct {
	local, routes map[string]bool
	listening     map[netip.AddrPort]bool
	backends      map[string]bool
	cmds          []string
}

func (f *fakeHost) run(_ context.Context, argv ...string) ([]byte, error) {
	f.cmds = append(f.cmds, strings.Join(argv, " "))
	switch {
	case argv[1] == "-j": // ip -j -4 route show table T proto P
		table := map[string]map[string]bool{"local": f.local, "main": f.routes}[argv[6]]
		var rs []map[string]string
		for p := range table {
			if strings.Contains(p, ":") == (argv[2] == "-6") {
				rs = append(rs, map[string]string{"dst": strings.TrimSuffix(strings.TrimSuffix(p, "/32"), "/128")})
			}
		}
		return json.Marshal(rs)
	case argv[2] == "replace" && argv[3] == "local":
		f.local[argv[4]] = true
	case argv[2] == "del" && argv[3] == "local":
		delete(f.local, argv[4])
	case argv[2] == "replace":
		f.routes[argv[3]] = true
	case argv[2] == "del":
		delete(f.routes, argv[3])
	default:
		return nil, fmt.Errorf("unexpected %v", argv)
	}
	return nil, nil
}

func (f *fakeHost) service(dir string) *Service {
	return &Service{Dir: dir, Run: f.run,
		Listening: func() (map[netip.AddrPort]bool, error) { return f.listening, nil },
		Probe:     func(_ context.Context, b string, _ router.Check) bool { return f.backends[b] },
		Log:       log.New(io.Discard, "", 0)}
}

func write(t *testing.T, dir string, c Config) {
	t.Helper()
	b, _ := json.Marshal(c)
	if err := os.WriteFile(filepath.Join(dir, c.Owner+".json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestSyncAnnouncesWhileServed(t *testing.T) {
	dir := t.TempDir()
	check := router.Check{Protocol: "TCP", Port: 10256, IntervalMS: 100, Rise: 1, Fall: 1}
	write(t, dir, Config{Owner: "c_a", Address: "10.99.0.5", Ports: []int{80, 443}, Backends: []string{"10.250.0.11"}, Check: check})
	write(t, dir, Config{Owner: "c_a.6", Address: "fd99::5", Ports: []int{80}})
	f := &fakeHost{local: map[string]bool{}, routes: map[string]bool{}, backends: map[string]bool{"10.250.0.11": true},
		listening: map[netip.AddrPort]bool{
			netip.MustParseAddrPort("10.99.0.5:80"): true, netip.MustParseAddrPort("10.99.0.5:443"): true,
			netip.MustParseAddrPort("[::]:80"): true}}
	s := f.service(dir)
	s.Linger = time.Hour
	s.Sync(context.Background())
	if !f.local["10.99.0.5/32"] || !f.routes["10.99.0.5/32"] {
		t.Fatalf("served IPv4 address not announced: %v %v", f.local, f.routes)
	}
	if !f.local["fd99::5/128"] || !f.routes["fd99::5/128"] {
		t.Fatalf("served IPv6 address (wildcard listener) not announced: %v %v", f.local, f.routes)
	}

	steps := []struct {
		name   string
		change func()
		want4  bool
	}{
		{"a frontend port stops listening", func() { delete(f.listening, netip.MustParseAddrPort("10.99.0.5:443")) }, false},
		{"it listens again", func() { f.listening[netip.MustParseAddrPort("10.99.0.5:443")] = true }, true},
		{"every backend fails", func() { f.backends["10.250.0.11"] = false }, false},
		{"a backend passes", func() { f.backends["10.250.0.11"] = true }, true},
		{"the file goes", func() { os.Remove(filepath.Join(dir, "c_a.json")) }, false},
	}
	for _, st := range steps {
		st.change()
		// The backend's check is due now, and one result decides (fall 1).
		s.health["c_a"]["10.250.0.11"] = &router.Health{}
		s.Sync(context.Background())
		if f.routes["10.99.0.5/32"] != st.want4 {
			t.Fatalf("%s: announced = %v, want %v (%v)", st.name, f.routes["10.99.0.5/32"], st.want4, f.cmds)
		}
		// The address stays while the load balancer is configured: a
		// withdrawal drops no connection the routers still send here.
		if !f.local["10.99.0.5/32"] {
			t.Fatalf("%s: the address is no longer local", st.name)
		}
	}
	// The file gone, the address lingers, then goes.
	s.Linger = 0
	s.Sync(context.Background())
	if f.local["10.99.0.5/32"] {
		t.Fatal("the address of a gone announcement stayed after Linger")
	}
	if !f.local["fd99::5/128"] || !f.routes["fd99::5/128"] {
		t.Fatal("the other load balancer's address went with the first one's file")
	}
}

func TestSyncRemovesOrphansAfterRestart(t *testing.T) {
	f := &fakeHost{local: map[string]bool{"10.99.0.9/32": true}, routes: map[string]bool{"10.99.0.9/32": true}, listening: map[netip.AddrPort]bool{}}
	s := f.service(t.TempDir())
	s.Linger = time.Nanosecond
	s.Sync(context.Background())
	if f.routes["10.99.0.9/32"] {
		t.Fatal("an owned route without a file stayed")
	}
	time.Sleep(time.Millisecond)
	s.Sync(context.Background())
	if f.local["10.99.0.9/32"] {
		t.Fatal("an owned address without a file stayed")
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		c    Config
		want string
	}{
		{Config{Owner: "c_a", Address: "10.0.0.1", Ports: []int{80}}, ""},
		{Config{Owner: "c_a; rm", Address: "10.0.0.1", Ports: []int{80}}, "owner"},
		{Config{Owner: "c_a", Address: "10.0.0.1/32", Ports: []int{80}}, "address"},
		{Config{Owner: "c_a", Address: "127.0.0.1", Ports: []int{80}}, "address"},
		{Config{Owner: "c_a", Address: "10.0.0.1"}, "ports"},
		{Config{Owner: "c_a", Address: "10.0.0.1", Ports: []int{70000}}, "port"},
		{Config{Owner: "c_a", Address: "10.0.0.1", Ports: []int{80}, Backends: []string{"node-a"}}, "backend"},
		{Config{Owner: "c_a", Address: "10.0.0.1", Ports: []int{80}, Backends: []string{"10.0.0.2"}}, "check"},
	} {
		err := tc.c.Validate()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.c, err, tc.want)
		}
	}
}

func TestParseListeners(t *testing.T) {
	// Lines as the kernel writes them: 10.99.0.5:80 LISTEN, 0.0.0.0:22
	// LISTEN, an established socket, and [fd99::5]:443 LISTEN.
	v4 := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0500630A:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0
   1: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2 1 0 100 0 0 10 0
   2: 0500630A:0051 0200000A:D431 01 00000000:00000000 00:00000000 00000000     0        0 3 1 0 100 0 0 10 0
`
	v6 := `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 000099FD000000000000000005000000:01BB 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4 1 0 100 0 0 10 0
`
	got := map[netip.AddrPort]bool{}
	for _, s := range []string{v4, v6} {
		if err := parseListeners(strings.NewReader(s), got); err != nil {
			t.Fatal(err)
		}
	}
	want := map[netip.AddrPort]bool{
		netip.MustParseAddrPort("10.99.0.5:80"): true, netip.MustParseAddrPort("0.0.0.0:22"): true,
		netip.MustParseAddrPort("[fd99::5]:443"): true,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("listeners = %v, want %v", got, want)
	}
}
