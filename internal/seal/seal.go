package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
)

// KeySize is the size of a key in bytes (AES-256).
const KeySize = 32

// version prefixes every sealed blob, so that a later format can be told
// apart.
const version byte = 1

// ErrOpen: the blob was not sealed with this key and associated data, or
// was altered.
var ErrOpen = errors.New("sealed data does not open with this key (another key, another place, or altered)")

// NewKey returns a random key.
func NewKey() ([]byte, error) {
	k := make([]byte, KeySize)
	if _, err := rand.Read(k); err != nil {
		return nil, fmt.Errorf("new key: %w", err)
	}
	return k, nil
}

func aead(key []byte) (cipher.AEAD, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("key is %d bytes, want %d", len(key), KeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// Seal encrypts plaintext with key, bound to ad (not secret, not stored).
func Seal(key, plaintext, ad []byte) ([]byte, error) {
	g, err := aead(key)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	out := make([]byte, 1+g.NonceSize(), 1+g.NonceSize()+len(plaintext)+g.Overhead())
	out[0] = version
	if _, err := rand.Read(out[1:]); err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	return g.Seal(out, out[1:], plaintext, ad), nil
}

// Open decrypts what Seal returned for the same key and ad.
func Open(key, sealed, ad []byte) ([]byte, error) {
	g, err := aead(key)
	if err != nil {
		return nil, fmt.Errorf("open: %w", err)
	}
	n := 1 + g.NonceSize()
	if len(sealed) < n+g.Overhead() || sealed[0] != version {
		return nil, ErrOpen
	}
	plain, err := g.Open(nil, sealed[1:n], sealed[n:], ad)
	if err != nil {
		return nil, ErrOpen
	}
	return plain, nil
}
