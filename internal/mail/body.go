package mail

import (
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// Stored bodies. A body is kept in messages.body either as TEXT, as every
// version before compression wrote it (and as short bodies still are), or
// as a BLOB whose first byte names its format. Bodies were about a third
// of mail.db. Zstandard halves a typical plain-text body nearly as well as
// deflate's best (0.61 against 0.59 of the size on the benchmark corpus)
// and unpacks it three to four times faster, which matters because a body
// substring filter unpacks every candidate the trigram index yields.
// The full-text tables read bodies through the messages_text view, which
// unpacks them (hestia_body).
const (
	// bodyZstd: the rest of the BLOB is one Zstandard frame (RFC 8878)
	// without a checksum (SQLite pages carry none either; a damaged frame
	// still fails to decode).
	bodyZstd byte = 1
	// packMinBytes: shorter bodies stay TEXT; the frame's overhead would
	// eat most of the saving.
	packMinBytes = 96
	// maxBodyBytes bounds what one stored body may unpack to. Parsed text
	// is far smaller; the bound keeps a corrupt frame from asking for
	// gigabytes.
	maxBodyBytes = 256 << 20
)

// bodyCodec packs and unpacks stored bodies. One encoder and one decoder
// serve every goroutine (EncodeAll and DecodeAll are safe for concurrent
// use and pool their own state). Each is made on first use: most
// processes (a search, a rescan) never pack a body, and many never unpack
// one.
type bodyCodec struct {
	enc func() (*zstd.Encoder, error)
	dec func() (*zstd.Decoder, error)
}

func newBodyCodec() *bodyCodec {
	return &bodyCodec{
		// SpeedBetterCompression: 1 MB smaller at 100,000 messages than
		// SpeedDefault, at no measurable import cost (bodies are small).
		// A 256 KiB window changes nothing for bodies up to that size (a
		// match cannot reach further back than the body) and keeps each
		// pooled encoder's history small: with the default 8 MiB one the
		// encoders were 25 of an import's 42 MB of live heap, paid for in
		// garbage collection under the import's soft heap limit.
		enc: sync.OnceValues(func() (*zstd.Encoder, error) {
			enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBetterCompression), zstd.WithEncoderCRC(false), zstd.WithSingleSegment(true), zstd.WithLowerEncoderMem(true), zstd.WithWindowSize(256<<10))
			if err != nil {
				return nil, fmt.Errorf("creating body encoder: %w", err)
			}
			return enc, nil
		}),
		dec: sync.OnceValues(func() (*zstd.Decoder, error) {
			dec, err := zstd.NewReader(nil, zstd.WithDecoderMaxMemory(maxBodyBytes), zstd.IgnoreChecksum(true))
			if err != nil {
				return nil, fmt.Errorf("creating body decoder: %w", err)
			}
			return dec, nil
		}),
	}
}

// pack returns what to store for text: the text itself when it is short
// or does not compress, else a bodyZstd BLOB.
func (c *bodyCodec) pack(text string) (any, error) {
	if len(text) < packMinBytes {
		return text, nil
	}
	enc, err := c.enc()
	if err != nil {
		return nil, err
	}
	dst := make([]byte, 1, len(text)/2+32)
	dst[0] = bodyZstd
	dst = enc.EncodeAll([]byte(text), dst)
	if len(dst) >= len(text) {
		return text, nil
	}
	return dst, nil
}

// unpack returns the text of a stored body: TEXT as is, a BLOB by its
// format byte. NULL (a missing row's body) is "".
func (c *bodyCodec) unpack(v any) (string, error) {
	switch b := v.(type) {
	case nil:
		return "", nil
	case string:
		return b, nil
	case []byte:
		if len(b) == 0 {
			return "", nil
		}
		if b[0] != bodyZstd {
			return "", fmt.Errorf("stored body has unknown format %d", b[0])
		}
		dec, err := c.dec()
		if err != nil {
			return "", err
		}
		out, err := dec.DecodeAll(b[1:], nil)
		if err != nil {
			return "", fmt.Errorf("unpacking body: %w", err)
		}
		return string(out), nil
	default:
		return "", fmt.Errorf("stored body has unexpected type %T", v)
	}
}
