package host

import (
	"reflect"
	"testing"
)

func TestParseSessions(t *testing.T) {
	// As FRR 8.4's vtysh prints it (fields trimmed), with a peer group.
	out := []byte(`{
  "10.77.0.1":{"remoteAs":64512,"nbrDesc":"tor","bgpState":"Established"},
  "fd00:250::fe":{"remoteAs":64512,"bgpState":"Active"},
  "lb":{"peerGroupMembers":{}}
}`)
	got, err := parseSessions(out)
	if err != nil {
		t.Fatal(err)
	}
	want := []BGPSession{{Peer: "tor", Address: "10.77.0.1", State: "Established"}, {Peer: "fd00:250::fe", Address: "fd00:250::fe", State: "Active"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("sessions %+v, want %+v", got, want)
	}
	if s, err := parseSessions([]byte("  \n")); err != nil || s != nil {
		t.Fatalf("no speaker: %v %v", s, err)
	}
	if _, err := parseSessions([]byte("% Unknown command")); err == nil {
		t.Fatal("vtysh's complaint parsed as sessions")
	}
}
