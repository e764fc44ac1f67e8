package seal

import (
	"bytes"
	"errors"
	"testing"
)

func TestSealOpen(t *testing.T) {
	key, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	other, _ := NewKey()
	plain := []byte("token = s3cr3t-value")
	sealed, err := Seal(key, plain, []byte("default/tfccm-plan-lb-a"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("s3cr3t")) {
		t.Fatal("sealed blob holds the plaintext")
	}
	again, _ := Seal(key, plain, []byte("default/tfccm-plan-lb-a"))
	if bytes.Equal(sealed, again) {
		t.Error("two seals of the same plaintext are equal: the nonce is not random")
	}
	got, err := Open(key, sealed, []byte("default/tfccm-plan-lb-a"))
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("Open = %q, %v", got, err)
	}
	flipped := bytes.Clone(sealed)
	flipped[len(flipped)-1] ^= 1
	for name, tc := range map[string]struct {
		key, blob, ad []byte
	}{
		"other key":   {other, sealed, []byte("default/tfccm-plan-lb-a")},
		"other place": {key, sealed, []byte("default/tfccm-plan-lb-b")},
		"altered":     {key, flipped, []byte("default/tfccm-plan-lb-a")},
		"truncated":   {key, sealed[:10], []byte("default/tfccm-plan-lb-a")},
		"empty":       {key, nil, []byte("default/tfccm-plan-lb-a")},
	} {
		if _, err := Open(tc.key, tc.blob, tc.ad); !errors.Is(err, ErrOpen) {
			t.Errorf("%s: Open = %v, want ErrOpen", name, err)
		}
	}
	if _, err := Seal([]byte("short"), plain, nil); err == nil {
		t.Error("a short key seals")
	}
}
