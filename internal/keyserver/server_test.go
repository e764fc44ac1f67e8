package keyserver

import (
	"bytes"
	"crypto/pbkdf2"
	"crypto/sha512"
	"encoding/json"
	"strings"
	"testing"
)

const testPass = "correct horse battery staple"

func newTestServer(t *testing.T) *Server {
	t.Helper()
	s, err := New(t.TempDir(), "/bin/false")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// helper runs the helper against s as tofu would, returning its stdout
// (header line, then the output) and stderr.
func helper(t *testing.T, cmd []string, in string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	rc := helperMain(cmd[2:], strings.NewReader(in), &out, &errb)
	return rc, out.String(), errb.String()
}

func parseOutput(t *testing.T, stdout string) output {
	t.Helper()
	hdr, body, ok := strings.Cut(stdout, "\n")
	if !ok || hdr != `{"magic":"OpenTofu-External-Key-Provider","version":1}` {
		t.Fatalf("header %q", hdr)
	}
	var o output
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields() // as OpenTofu decodes it
	if err := dec.Decode(&o); err != nil {
		t.Fatalf("output %q: %v", body, err)
	}
	return o
}

func TestHelperAnswersOpenTofu(t *testing.T) {
	s := newTestServer(t)
	cmd, err := s.Register(testPass)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.Join(cmd, " "), testPass) {
		t.Fatalf("the passphrase is in the command %q", cmd)
	}
	// Encrypting: tofu sends null.
	rc, stdout, stderr := helper(t, cmd, "null")
	if rc != 0 {
		t.Fatalf("rc %d: %s", rc, stderr)
	}
	first := parseOutput(t, stdout)
	m := first.Meta.ExternalData
	if m == nil || len(m.Salt) != saltLength || m.Iterations != DefaultIterations || m.HashFunction != "sha512" || m.KeyLength != 32 {
		t.Fatalf("meta %+v", m)
	}
	want := pbkdf2Key(t, testPass, m.Salt, m.Iterations)
	if !bytes.Equal(first.Keys.EncryptionKey, want) || first.Keys.DecryptionKey != nil {
		t.Fatalf("keys %+v, want encryption key %x only", first.Keys, want)
	}
	// Decrypting what it wrote: the same key, from the cache.
	in, _ := json.Marshal(first.Meta)
	rc, stdout, stderr = helper(t, cmd, string(in)+"\n")
	if rc != 0 {
		t.Fatalf("rc %d: %s", rc, stderr)
	}
	second := parseOutput(t, stdout)
	if !bytes.Equal(second.Keys.DecryptionKey, want) || !bytes.Equal(second.Keys.EncryptionKey, want) {
		t.Fatalf("keys %+v, want %x", second.Keys, want)
	}
	// A state of an earlier process (another salt, fewer iterations).
	old := meta{Salt: bytes.Repeat([]byte{7}, 32), Iterations: minIterations, HashFunction: "sha512", KeyLength: 32}
	in, _ = json.Marshal(providerMeta{ExternalData: &old})
	for range 3 {
		rc, stdout, stderr = helper(t, cmd, string(in))
		if rc != 0 {
			t.Fatalf("rc %d: %s", rc, stderr)
		}
		if got := parseOutput(t, stdout).Keys.DecryptionKey; !bytes.Equal(got, pbkdf2Key(t, testPass, old.Salt, old.Iterations)) {
			t.Fatalf("decryption key %x for the old salt", got)
		}
	}
	// Once per salt: the process's own and the old one.
	if n := s.Derivations(); n != 2 {
		t.Fatalf("%d derivations, want 2", n)
	}
	// The same passphrase registered again (a reloaded config) is the same key.
	again, _ := s.Register(testPass)
	if strings.Join(again, " ") != strings.Join(cmd, " ") {
		t.Fatalf("registered again: %q, first %q", again, cmd)
	}
}

func TestHelperRefuses(t *testing.T) {
	s := newTestServer(t)
	cmd, err := s.Register(testPass)
	if err != nil {
		t.Fatal(err)
	}
	metaJSON := func(m meta) string {
		b, _ := json.Marshal(providerMeta{ExternalData: &m})
		return string(b)
	}
	good := meta{Salt: bytes.Repeat([]byte{1}, 32), Iterations: minIterations, HashFunction: "sha512", KeyLength: 32}
	for _, tc := range []struct {
		name, in, want string
		cmd            []string
	}{
		{"unknown id", "null", "unknown key id", []string{"x", Marker, s.Socket(), "nope"}},
		{"no server", "null", "key server", []string{"x", Marker, s.Socket() + ".gone", cmd[3]}},
		{"bad json", "{", "invalid metadata", cmd},
		{"iterations too many", metaJSON(meta{Salt: good.Salt, Iterations: maxIterations + 1, HashFunction: "sha512", KeyLength: 32}), "iterations", cmd},
		{"iterations too few", metaJSON(meta{Salt: good.Salt, Iterations: 1000, HashFunction: "sha512", KeyLength: 32}), "iterations", cmd},
		{"short salt", metaJSON(meta{Salt: []byte{1}, Iterations: minIterations, HashFunction: "sha512", KeyLength: 32}), "salt", cmd},
		{"hash", metaJSON(meta{Salt: good.Salt, Iterations: minIterations, HashFunction: "md5", KeyLength: 32}), "hash function", cmd},
		{"key length", metaJSON(meta{Salt: good.Salt, Iterations: minIterations, HashFunction: "sha512", KeyLength: 7}), "key length", cmd},
		{"arguments", "null", "usage", cmd[:3]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc, _, stderr := helper(t, tc.cmd, tc.in)
			if rc == 0 || !strings.Contains(stderr, tc.want) {
				t.Fatalf("rc %d, stderr %q, want an error with %q", rc, stderr, tc.want)
			}
			if strings.Contains(stderr, testPass) {
				t.Fatalf("stderr holds the passphrase: %q", stderr)
			}
		})
	}
	if n := s.Derivations(); n != 0 {
		t.Fatalf("%d derivations for refused requests", n)
	}
	if _, err := s.Register("short"); err == nil || !strings.Contains(err.Error(), "at least 16") {
		t.Fatalf("short passphrase: %v", err)
	}
}

func pbkdf2Key(t *testing.T, pass string, salt []byte, iter int) []byte {
	t.Helper()
	k, err := pbkdf2.Key(sha512.New, pass, salt, iter, 32)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
