package jobrunner

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
)

func frameOf(n uint32, payload string) []byte {
	var h [4]byte
	binary.BigEndian.PutUint32(h[:], n)
	return append(h[:], payload...)
}

func TestReadFrame(t *testing.T) {
	for _, tc := range []struct {
		name  string
		in    []byte
		limit int
		want  string
		err   string // "" none
	}{
		{"one frame", frameOf(5, "hello"), 100, "hello", ""},
		{"empty payload", frameOf(0, ""), 100, "", ""},
		{"trailing bytes stay", frameOf(2, "hiXYZ"), 100, "hi", ""},
		{"at the limit", frameOf(3, "abc"), 3, "abc", ""},
		{"nothing", nil, 100, "", "no frame"},
		{"truncated header", []byte{0, 0}, 100, "", "truncated"},
		{"truncated payload", frameOf(10, "abc"), 100, "", "truncated"},
		{"oversized", frameOf(101, ""), 100, "", "above the limit"},
		{"oversized huge", frameOf(0xffffffff, "x"), maxFrame, "", "above the limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readFrame(bytes.NewReader(tc.in), tc.limit)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestWriteFrameRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name    string
		payload []byte
		err     bool
	}{
		{"small", []byte("request"), false},
		{"empty", nil, false},
		{"binary", []byte{0, 1, 2, 255}, false},
		{"at the limit", make([]byte, maxFrame), false},
		{"oversized", make([]byte, maxFrame+1), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := writeFrame(&buf, tc.payload)
			if tc.err {
				if err == nil || buf.Len() != 0 {
					t.Fatalf("err = %v, %d bytes written; want an error and nothing written", err, buf.Len())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := readFrame(&buf, maxFrame)
			if err != nil || !bytes.Equal(got, tc.payload) {
				t.Fatalf("round trip: %d bytes, %v; want %d bytes", len(got), err, len(tc.payload))
			}
			if _, err := readFrame(&buf, maxFrame); !errors.Is(err, errNoFrame) {
				t.Fatalf("after the frame: %v, want errNoFrame", err)
			}
		})
	}
}

// A writer that fails reports it.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

func TestWriteFrameFails(t *testing.T) {
	if err := writeFrame(failWriter{}, []byte("x")); !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("err = %v", err)
	}
}
