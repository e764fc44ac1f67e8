package jobrunner

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Frames: how a request goes to a pooled runner pod over the exec's
// stdin and its result comes back over stdout. A frame is a 4-byte
// big-endian length, then that many bytes. A request and a result are one
// frame each (a packed archive, pack.go); nothing else is written to the
// pod's stdout.

// frameHeader is the bytes before a frame's payload.
const frameHeader = 4

// maxFrame bounds a frame's payload: the most a workspace or a result
// may pack to (as with Jobs, MaxParts Secrets of PartSize bytes).
const maxFrame = PartSize * MaxParts

// errNoFrame: the stream ended before a frame began (the pod said nothing).
var errNoFrame = errors.New("no frame: the stream ended")

// writeFrame writes b as one frame.
func writeFrame(w io.Writer, b []byte) error {
	if len(b) > maxFrame {
		return fmt.Errorf("frame of %d bytes above the limit of %d", len(b), maxFrame)
	}
	var h [frameHeader]byte
	binary.BigEndian.PutUint32(h[:], uint32(len(b)))
	if _, err := w.Write(h[:]); err != nil {
		return fmt.Errorf("write frame: %w", err)
	}
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("write frame: %w", err)
	}
	return nil
}

// readFrame reads one frame of at most limit bytes. A stream that ends
// before the frame does (a pod gone mid-run) is an error, never a short
// payload.
func readFrame(r io.Reader, limit int) ([]byte, error) {
	var h [frameHeader]byte
	if n, err := io.ReadFull(r, h[:]); err != nil {
		if n == 0 && errors.Is(err, io.EOF) {
			return nil, errNoFrame
		}
		return nil, fmt.Errorf("read frame header: %w", truncated(err))
	}
	n := binary.BigEndian.Uint32(h[:])
	if uint64(n) > uint64(limit) {
		return nil, fmt.Errorf("frame of %d bytes above the limit of %d", n, limit)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, fmt.Errorf("read frame of %d bytes: %w", n, truncated(err))
	}
	return b, nil
}

func truncated(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("truncated: %w", io.ErrUnexpectedEOF)
	}
	return err
}
