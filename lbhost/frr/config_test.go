package frr

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func good() Config {
	lp := uint32(200)
	return Config{
		ASN:      64513,
		RouterID: netip.MustParseAddr("10.77.0.2"),
		Networks: []netip.Prefix{netip.MustParsePrefix("10.77.0.0/24"), netip.MustParsePrefix("fd77::/64")},
		Peers: []Peer{
			{Name: "tor-a", Address: netip.MustParseAddr("10.77.0.1"), ASN: 64512, Keepalive: time.Second, Hold: 3 * time.Second, BFDProfile: "fast", Password: "s3cr3t!"},
			{Name: "tor-a6", Address: netip.MustParseAddr("fd77::1"), ASN: 64512, Port: 1179},
		},
		BFDProfiles: []BFDProfile{{Name: "fast", ReceiveInterval: 100 * time.Millisecond, TransmitInterval: 100 * time.Millisecond, DetectMultiplier: 3}},
		Pools: []Pool{{Name: "default", Prefixes: []netip.Prefix{netip.MustParsePrefix("10.99.0.0/24"), netip.MustParsePrefix("fd99::/112")},
			Communities: []string{"64513:100", "no-export", "64513:1:2"}, LocalPref: &lp}},
	}
}

func TestValidateNamesTheSetting(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Config)
		field  string
		msg    string
	}{
		{"good", func(*Config) {}, "", ""},
		{"reserved asn", func(c *Config) { c.ASN = 23456 }, "asn", "AS_TRANS"},
		{"asn zero", func(c *Config) { c.ASN = 0 }, "asn", "reserved"},
		{"peer asn 65535", func(c *Config) { c.Peers[0].ASN = 65535 }, "peers[0].asn", "reserved"},
		{"private asn clash", func(c *Config) { c.Peers[0].ASN = 64513 }, "peers[0].asn", "host's own asn"},
		{"ibgp on purpose", func(c *Config) { c.Peers[0].ASN = 64513; c.Peers[0].IBGP = true }, "", ""},
		{"ibgp with another asn", func(c *Config) { c.Peers[0].IBGP = true }, "peers[0].ibgp", "not the host's asn"},
		{"peer off every network", func(c *Config) { c.Peers[0].Address = netip.MustParseAddr("192.0.2.1") }, "peers[0].address", "outside every network"},
		{"peer address twice", func(c *Config) { c.Peers[1].Address = c.Peers[0].Address }, "peers[1].address", "twice"},
		{"peer name", func(c *Config) { c.Peers[0].Name = "ToR A" }, "peers[0].name", "a-z"},
		{"hold below 3 x keepalive", func(c *Config) { c.Peers[0].Hold = 2 * time.Second }, "peers[0].hold_time", "3 × keepalive"},
		{"fractional timer", func(c *Config) { c.Peers[0].Hold = 3500 * time.Millisecond }, "peers[0].hold_time", "whole seconds"},
		{"password with a space", func(c *Config) { c.Peers[0].Password = "a b" }, "peers[0].password", "printable"},
		{"unknown bfd profile", func(c *Config) { c.Peers[0].BFDProfile = "slow" }, "peers[0].bfd_profile", "not one of"},
		{"bfd interval", func(c *Config) { c.BFDProfiles[0].ReceiveInterval = time.Millisecond }, "bfd_profiles[0].receive_interval", "10ms-60s"},
		{"bfd multiplier", func(c *Config) { c.BFDProfiles[0].DetectMultiplier = 1 }, "bfd_profiles[0].detect_multiplier", "2-255"},
		{"community half too big", func(c *Config) { c.Pools[0].Communities[0] = "70000:1" }, "pools[0].communities[0]", "0-65535"},
		{"community text", func(c *Config) { c.Pools[0].Communities[1] = "no-export; exit" }, "pools[0].communities[1]", "want <asn>:<value>"},
		{"large community too big", func(c *Config) { c.Pools[0].Communities[2] = "1:2:4294967296" }, "pools[0].communities[2]", "0-4294967295"},
		{"pool prefix not a network", func(c *Config) { c.Pools[0].Prefixes[0] = netip.MustParsePrefix("10.99.0.5/24") }, "pools[0].prefixes[0]", "network address"},
		{"router id", func(c *Config) { c.RouterID = netip.MustParseAddr("fd77::2") }, "router_id", "IPv4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := good()
			tc.change(&c)
			err := c.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			var fe *Error
			if !errors.As(err, &fe) || fe.Field != tc.field || !strings.Contains(fe.Msg, tc.msg) {
				t.Fatalf("Validate = %v, want %s: ...%s...", err, tc.field, tc.msg)
			}
			if strings.Contains(err.Error(), "s3cr3t") || (c.Peers[0].Password != "" && strings.Contains(err.Error(), c.Peers[0].Password)) {
				t.Fatalf("the error shows the password: %v", err)
			}
		})
	}
}
