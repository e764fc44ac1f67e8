package keyserver

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/json"
	"testing"
)

// sealed is a document as OpenTofu's aes_gcm method writes it with the
// external key provider's answer out (aad: additional data, none by default).
func sealed(t *testing.T, out output, plain, aad []byte) []byte {
	t.Helper()
	block, err := aes.NewCipher(out.Keys.EncryptionKey)
	if err != nil {
		t.Fatal(err)
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	nonce := make([]byte, gcm.NonceSize())
	_, _ = rand.Read(nonce)
	meta, _ := json.Marshal(out.Meta)
	doc, _ := json.Marshal(payload{Meta: map[string][]byte{"key_provider.external.main": meta}, Data: append(nonce, gcm.Seal(nil, nonce, plain, aad)...), Version: "v0"})
	return doc
}

func TestDecrypt(t *testing.T) {
	s := newTestServer(t)
	cmd, err := s.Register(testPass)
	if err != nil {
		t.Fatal(err)
	}
	other := newTestServer(t)
	otherCmd, err := other.Register("another-passphrase-0123")
	if err != nil {
		t.Fatal(err)
	}
	answer := func(cmd []string) output {
		rc, stdout, stderr := helper(t, cmd, "null")
		if rc != 0 {
			t.Fatal(stderr)
		}
		return parseOutput(t, stdout)
	}
	plain := []byte(`{"version":4,"outputs":{"ip":{"value":"10.0.0.1","type":"string"}}}`)
	ours, theirs := answer(cmd), answer(otherCmd)
	for _, tc := range []struct {
		name string
		doc  []byte
		ok   bool
	}{
		{"ours", sealed(t, ours, plain, nil), true},
		{"another passphrase", sealed(t, theirs, plain, nil), false},
		{"aad set", sealed(t, ours, plain, []byte("canary")), false},
		{"plaintext", plain, false},
		{"not json", []byte("{"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Decrypt(tc.doc)
			if tc.ok != (err == nil) || (tc.ok && string(got) != string(plain)) {
				t.Fatalf("Decrypt: %q, %v (want ok=%v)", got, err, tc.ok)
			}
		})
	}
}
