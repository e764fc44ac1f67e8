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
	"slices"
	"strings"
	"testing"

	"github.com/tfccm/tfccm/lbhost/router"
)

// fakeHost is the loopback's addresses and the sockets listening.
type fakeHost struct {
	addrs     map[string]int // prefix -> metric
	listening map[netip.AddrPort]bool
	backends  map[string]bool
	cmds      []string
}

func (f *fakeHost) run(_ context.Context, argv ...string) ([]byte, error) {
	switch {
	case slices.Equal(argv[:3], []string{"ip", "-j", "addr"}):
		type ai struct {
			Local     string `json:"local"`
			PrefixLen int    `json:"prefixlen"`
			Metric    int    `json:"metric,omitempty"`
		}
		var infos []ai
		for p, m := range f.addrs {
			pr := netip.MustParsePrefix(p)
			infos = append(infos, ai{pr.Addr().String(), pr.Bits(), m})
		}
		return json.Marshal([]map[string]any{{"ifname": "lo", "addr_info": infos}})
	case argv[2] == "add":
		f.addrs[argv[3]] = Metric
	case argv[2] == "del":
		delete(f.addrs, argv[3])
	default:
		return nil, fmt.Errorf("unexpected %v", argv)
	}
	f.cmds = append(f.cmds, strings.Join(argv, " "))
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
	// Someone else's address on lo: never touched.
	f := &fakeHost{addrs: map[string]int{"127.0.0.1/8": 0, "192.0.2.7/32": 0}, backends: map[string]bool{"10.250.0.11": true},
		listening: map[netip.AddrPort]bool{
			netip.MustParseAddrPort("10.99.0.5:80"): true, netip.MustParseAddrPort("10.99.0.5:443"): true,
			netip.MustParseAddrPort("[::]:80"): true}}
	s := f.service(dir)
	s.Sync(context.Background())
	if _, ok := f.addrs["10.99.0.5/32"]; !ok {
		t.Fatalf("served IPv4 address not announced: %v", f.addrs)
	}
	if _, ok := f.addrs["fd99::5/128"]; !ok {
		t.Fatalf("served IPv6 address (wildcard listener) not announced: %v", f.addrs)
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
		if _, ok := f.addrs["10.99.0.5/32"]; ok != st.want4 {
			t.Fatalf("%s: announced = %v, want %v (%v)", st.name, ok, st.want4, f.cmds)
		}
	}
	if _, ok := f.addrs["192.0.2.7/32"]; !ok {
		t.Fatal("an address the announcer does not own was removed")
	}
	if _, ok := f.addrs["fd99::5/128"]; !ok {
		t.Fatal("the other load balancer's address went with the first one's file")
	}
}

func TestSyncRemovesOrphansAfterRestart(t *testing.T) {
	f := &fakeHost{addrs: map[string]int{"10.99.0.9/32": Metric, "10.99.0.10/32": 0}, listening: map[netip.AddrPort]bool{}}
	f.service(t.TempDir()).Sync(context.Background())
	if _, ok := f.addrs["10.99.0.9/32"]; ok {
		t.Fatal("an owned address without a file stayed")
	}
	if _, ok := f.addrs["10.99.0.10/32"]; !ok {
		t.Fatal("an address without the metric was removed")
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
