package host

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadHandmade: the hand-made instance is read from the host's main
// keepalived configuration; one that is not there is IsNoInstance; a
// missing file or a malformed one is an error naming the host and file,
// never quoting it; CheckHandmade names both sides of a mismatch.
func TestReadHandmade(t *testing.T) {
	const good = "global_defs {\n    router_id s3cr3t\n}\nvrrp_instance VI_WEB {\n    interface eth0\n    virtual_router_id 51\n    virtual_ipaddress {\n        10.0.0.5/32\n    }\n}\n"
	for _, tc := range []struct {
		name, main, want string
		none             bool
	}{
		{name: "present", main: good},
		{name: "absent", main: "global_defs {\n    router_id s3cr3t\n}\n", none: true, want: "vrrp_instance VI_WEB: not found"},
		{name: "malformed", main: "vrrp_instance VI_WEB {\n    interface s3cr3t {\n", want: "cannot be read (line 2: a '{' is never closed)"},
		{name: "no file", want: "keepalived's main configuration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{}
			if tc.main != "" {
				files["keepalived.conf"] = tc.main
			}
			h := fileHost(t, files)
			h.Keepalived.Config = filepath.Join(h.Dir, "keepalived.conf")
			hm, err := h.ReadHandmade(context.Background(), "VI_WEB")
			if tc.want == "" {
				if err != nil || hm.Address != "10.0.0.5" || hm.VirtualRouterID != 51 {
					t.Fatalf("got %+v, %v", hm, err)
				}
				if err := CheckHandmade(hm, h.T, "10.0.0.6", 51, "eth0"); err == nil || !strings.Contains(err.Error(), "holds 10.0.0.5 with virtual router id 51 on eth0; the VIP adopting it is 10.0.0.6") {
					t.Errorf("mismatch: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "s3cr3t") || IsNoInstance(err) != tc.none {
				t.Fatalf("error %v (no instance %t), want one containing %q, IsNoInstance %t", err, IsNoInstance(err), tc.want, tc.none)
			}
		})
	}
}
