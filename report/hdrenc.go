package report

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"math"
	"math/bits"
	"runtime"
	"sync"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// v2Encoder writes histograms of the recorder's geometry in HdrHistogram's
// V2 compressed encoding: the payload PackedHistogram.Encode writes, in a
// zlib stream of stored deflate blocks, with one writer and its buffers
// reused for every histogram. Any inflater reads it (the reference
// decoders do). The library allocates a best-compression deflater (about a
// megabyte) per call, which for the 250 tenants and 600 intervals per
// group of a ten-minute run costs a second and most of a gigabyte of
// garbage; even reused, deflating costs 37 µs a histogram at that level
// and 17 µs at the fastest, against 0.25 µs stored, for payloads of a few
// hundred bytes that compress by a fifth (153 KB deflated, 193 KB stored,
// for the 855 histograms of one stock-balance point).
//
// The zero value is ready to use. A v2Encoder is not safe for concurrent use.
type v2Encoder struct {
	inner []byte
	zb    bytes.Buffer
	zw    *zlib.Writer
	out   []byte
}

// The V2 cookies: the uncompressed payload's and the compressed wrapper's.
const (
	v2Cookie           = uint32(hdr.V2EncodingCookieBase | 0x10)
	v2CompressedCookie = uint32(hdr.V2CompressedEncodingCookieBase | 0x10)
	v2HeaderSize       = 40
)

// Geometry of histLowest=1 at 3 digits: 2048 sub-buckets, half of them per
// bucket after the first.
const (
	subBucketHalfMag = 10
	subBucketMask    = 1<<(subBucketHalfMag+1) - 1
)

// countsIndex is the flat counts index of value v in the recorder's
// geometry.
func countsIndex(v int64) int64 {
	b := int64(64-bits.LeadingZeros64(uint64(v)|subBucketMask)) - (subBucketHalfMag + 1)
	sub := v >> b
	return (b+1)<<subBucketHalfMag + sub - 1<<subBucketHalfMag
}

func appendZigZag(b []byte, v int64) []byte {
	return binary.AppendUvarint(b, uint64((v<<1)^(v>>63)))
}

// encode returns h's V2 compressed, base64 encoding.
func (e *v2Encoder) encode(h *hdr.PackedHistogram) string {
	if h.LowestTrackableValue() != histLowest || h.HighestTrackableValue() != histHighest || h.SignificantFigures() != histDigits {
		return encode(h)
	}
	in := append(e.inner[:0], make([]byte, v2HeaderSize)...)
	var next int64
	h.ForEachBucket(func(v, c int64) bool {
		i := countsIndex(v)
		switch gap := i - next; {
		case gap == 1:
			in = appendZigZag(in, 0)
		case gap > 1:
			in = appendZigZag(in, -gap)
		}
		in = appendZigZag(in, c)
		next = i + 1
		return true
	})
	if next == 0 { // empty: the payload is the one zero count at index 0
		in = appendZigZag(in, 0)
	}
	binary.BigEndian.PutUint32(in[0:], v2Cookie)
	binary.BigEndian.PutUint32(in[4:], uint32(len(in)-v2HeaderSize))
	binary.BigEndian.PutUint32(in[8:], 0) // normalizing index offset
	binary.BigEndian.PutUint32(in[12:], histDigits)
	binary.BigEndian.PutUint64(in[16:], histLowest)
	binary.BigEndian.PutUint64(in[24:], uint64(histHighest))
	binary.BigEndian.PutUint64(in[32:], math.Float64bits(1))
	e.inner = in

	e.zb.Reset()
	if e.zw == nil {
		e.zw, _ = zlib.NewWriterLevel(&e.zb, zlib.NoCompression) // a valid level: no error
	} else {
		e.zw.Reset(&e.zb)
	}
	e.zw.Write(in) // to a bytes.Buffer: cannot fail
	e.zw.Close()

	out := append(e.out[:0], make([]byte, 8)...)
	binary.BigEndian.PutUint32(out[0:], v2CompressedCookie)
	binary.BigEndian.PutUint32(out[4:], uint32(e.zb.Len()))
	out = append(out, e.zb.Bytes()...)
	e.out = out
	return base64.StdEncoding.EncodeToString(out)
}

// encodeAll calls encode(i, enc) for every i in [0, n), spread over the
// processors, each goroutine with its own encoder, and waits for all: encode
// must write only what i names.
func encodeAll(n int, encode func(i int, enc *v2Encoder)) {
	workers := min(runtime.GOMAXPROCS(0), max(1, n/64))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			var enc v2Encoder
			for i := w; i < n; i += workers {
				encode(i, &enc)
			}
		})
	}
	wg.Wait()
}
