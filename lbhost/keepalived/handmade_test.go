package keepalived

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata's golden files")

// TestFindHandmade reads hand-made instances out of keepalived main
// configurations: what tfccm carries is read, everything else and every
// malformed file is refused with an error naming the file, the instance
// and line numbers, never the file's text (testdata's secrets are
// "s3cr3t...").
func TestFindHandmade(t *testing.T) {
	for _, tt := range []struct {
		file, name string
		want       *Instance // nil: an error
		err        string
	}{
		{file: "main.conf", name: "VI_WEB", want: &Instance{Name: "VI_WEB", Address: "192.0.2.10", AddressBits: 24, AddressInterface: "eth0", Interface: "eth0",
			VirtualRouterID: 51, Priority: 150, AdvertInt: 1, NoPreempt: true, SourceAddress: "10.0.0.2", Peers: []string{"10.0.0.3"}}},
		{file: "main.conf", name: "VI_V6", want: &Instance{Name: "VI_V6", Address: "fd00:5::7", AddressInterface: "eth0", Interface: "eth0",
			VirtualRouterID: 54, Priority: 90, AdvertInt: 1}},
		{file: "main.conf", name: "VI_GONE", err: "vrrp_instance VI_GONE: not found (only the file itself is searched"},
		{file: "main.conf", name: "chk_haproxy", err: "vrrp_instance chk_haproxy: not found"},
		{file: "main.conf", name: "VI_DB", err: "vrrp_instance VI_DB: line 34: a setting tfccm's instance does not carry"},
		{file: "main.conf", name: "VI_TWO", err: "line 49: virtual_ipaddress holds 2 addresses; tfccm adopts an instance with exactly one"},
		{file: "main.conf", name: "VI_NOVRID", err: "vrrp_instance VI_NOVRID: virtual_router_id is not set"},
		{file: "main.conf", name: "VI_LABEL", err: "line 75: a virtual_ipaddress entry has options tfccm's instance does not carry"},
		{file: "main.conf", name: "VI_DUPKEY", err: "line 82: virtual_router_id is set twice (first at line 81)"},
		{file: "main.conf", name: `VI" } vrrp_script x {`, err: "keepalived instance name: must be"},
		{file: "unclosed.conf", name: "VI_WEB", err: "unclosed.conf cannot be read (line 4: a '{' is never closed) while looking for vrrp_instance VI_WEB"},
		{file: "stray-brace.conf", name: "VI_WEB", err: "line 8: a '}' closes no block"},
		{file: "quote.conf", name: "VI_WEB", err: "line 2: a quoted string is not closed on its line"},
		{file: "twice.conf", name: "VI_WEB", err: "vrrp_instance VI_WEB: defined 2 times (lines 1 and 8)"},
		{file: "sharedline.conf", name: "VI_WEB", err: "line 1: the block shares a line with other settings"},
	} {
		t.Run(tt.file+"/"+tt.name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			hm, err := FindHandmade(data, tt.file, tt.name)
			if tt.want == nil {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error = %v, want one containing %q", err, tt.err)
				}
				if strings.Contains(err.Error(), "s3cr3t") {
					t.Errorf("the error quotes the file: %v", err)
				}
				if tt.name == "VI_WEB" || strings.HasPrefix(tt.name, "VI_") {
					if !strings.Contains(err.Error(), tt.file) {
						t.Errorf("the error does not name the file: %v", err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(hm.Instance, *tt.want) {
				t.Errorf("got %+v\nwant %+v", hm.Instance, *tt.want)
			}
		})
	}
}

// TestHandmadeWithout removes exactly the instance's lines (golden file,
// -update rewrites it), and what is left still parses.
func TestHandmadeWithout(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "main.conf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"VI_WEB", "VI_DB"} {
		hm, err := FindHandmade(data, "main.conf", name)
		if name == "VI_DB" {
			// Refused, yet found: its block is where the line numbers say.
			if err == nil {
				t.Fatal("VI_DB adopted")
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		got := hm.Without(data)
		golden := filepath.Join("testdata", "main-without-"+name+".conf")
		if *update {
			if err := os.WriteFile(golden, got, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("without %s:\n%s\nwant:\n%s", name, got, want)
		}
		if _, err := FindHandmade(got, "main.conf", name); err == nil || !strings.Contains(err.Error(), "not found") {
			t.Errorf("%s still there after removal: %v", name, err)
		}
		if _, err := FindHandmade(got, "main.conf", "VI_V6"); err != nil {
			t.Errorf("the rest no longer parses: %v", err)
		}
	}
}

// TestRenderAdopted: an adopted instance keeps its name in tfccm's
// fragment, and the fragment parses back with it.
func TestRenderAdopted(t *testing.T) {
	in := Instance{Owner: "c1_web", Name: "VI_WEB", Address: "192.0.2.10", AddressBits: 24, AddressInterface: "eth0", Interface: "eth0",
		VirtualRouterID: 51, Priority: 150, AdvertInt: 1, NoPreempt: true}
	data, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "vrrp_instance VI_WEB {\n") || !strings.Contains(string(data), "192.0.2.10/24 dev eth0") {
		t.Errorf("fragment does not keep the name:\n%s", data)
	}
	got, err := Parse(data)
	if err != nil || !reflect.DeepEqual(got, in) {
		t.Errorf("round trip: %+v, %v", got, err)
	}
	in.Name = "VI } x {"
	if _, err := Render(in); err == nil || !strings.HasPrefix(err.Error(), "keepalived_instance:") {
		t.Errorf("a bad name rendered: %v", err)
	}
}
