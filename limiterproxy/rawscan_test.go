package limiterproxy

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
)

// TestReqScan feeds header blocks and checks what reqScan notes of each,
// fed at once and a byte at a time.
func TestReqScan(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []rawBlock // in order; ok false after them
		off  bool       // whether it stops noting
	}{
		{"plain GET", "GET / HTTP/1.1\r\nHost: a\r\n\r\n",
			[]rawBlock{{hosts: 1, length: -1}}, false},
		{"empty host", "GET / HTTP/1.0\r\nHost: \r\n\r\n",
			[]rawBlock{{hosts: 1, emptyHost: true, http10: true, length: -1}}, false},
		{"obs-fold", "GET / HTTP/1.1\r\nHost: a\r\nX: b\r\n\tc\r\n\r\n",
			[]rawBlock{{hosts: 1, obsFold: true, length: -1}}, false},
		{"two requests, a body skipped", "POST / HTTP/1.1\r\nContent-Length: 12\r\n\r\nX: y\r\n \r\n\r\nGET / HTTP/1.1\r\nHOST: b\r\n\r\n",
			[]rawBlock{{contentLengths: 1, length: 12}, {hosts: 1, length: -1}}, false},
		{"duplicate length", "POST / HTTP/1.1\r\ncontent-length: 1\r\nContent-Length: 1\r\n\r\nx",
			[]rawBlock{{contentLengths: 2, length: 1}}, true},
		{"chunked stops", "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET / HTTP/1.1\r\n\r\n",
			[]rawBlock{{transferEncodings: 1, length: -1}}, true},
		{"bare LF and a leading empty line", "\r\nGET / HTTP/1.1\nHost: a\n\n",
			[]rawBlock{{hosts: 1, length: -1}}, false},
		{"long lines", "GET /" + strings.Repeat("a", 500) + " HTTP/1.0\r\nX-Long: " + strings.Repeat("b", 500) + "\r\n\r\n",
			[]rawBlock{{http10: true, length: -1}}, false},
	}
	for _, tt := range tests {
		for _, split := range []bool{false, true} {
			var s reqScan
			if split {
				for i := 0; i < len(tt.in); i++ {
					s.feed([]byte{tt.in[i]})
				}
			} else {
				s.feed([]byte(tt.in))
			}
			for i, want := range tt.want {
				got, ok := s.next()
				if !ok || got != want {
					t.Errorf("%s (split %t): block %d = %+v, %t; want %+v", tt.name, split, i, got, ok, want)
				}
			}
			if got, ok := s.next(); ok {
				t.Errorf("%s (split %t): an extra block %+v", tt.name, split, got)
			}
			if s.off != tt.off {
				t.Errorf("%s (split %t): off = %t, want %t", tt.name, split, s.off, tt.off)
			}
		}
	}
}

// FuzzReqScan: whatever the bytes and however they are split, reqScan
// notes the same blocks, within its bound, and for a request Go's parser
// reads as one with a body of known length it counts that length's
// header as Go saw it.
func FuzzReqScan(f *testing.F) {
	f.Add([]byte("GET / HTTP/1.1\r\nHost: a\r\n\r\n"), uint8(3))
	f.Add([]byte("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabcGET / HTTP/1.0\r\n\r\n"), uint8(7))
	f.Add([]byte("GET / HTTP/1.1\r\nX: a\r\n b\r\nTransfer-Encoding: chunked\r\n\r\n"), uint8(1))
	f.Fuzz(func(t *testing.T, in []byte, step uint8) {
		var whole, pieces reqScan
		whole.feed(in)
		n := int(step%16) + 1
		for i := 0; i < len(in); i += n {
			pieces.feed(in[i:min(i+n, len(in))])
		}
		if len(whole.done) > maxScanAhead {
			t.Fatalf("%d blocks kept, bound %d", len(whole.done), maxScanAhead)
		}
		if whole.off != pieces.off || len(whole.done) != len(pieces.done) {
			t.Fatalf("at once: off %t, %d blocks; in pieces of %d: off %t, %d blocks", whole.off, len(whole.done), n, pieces.off, len(pieces.done))
		}
		for i := range whole.done {
			if whole.done[i] != pieces.done[i] {
				t.Fatalf("block %d: at once %+v, in pieces of %d %+v", i, whole.done[i], n, pieces.done[i])
			}
		}
		req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(string(in))))
		if err != nil || len(whole.done) == 0 {
			return
		}
		if b := whole.done[0]; req.ContentLength > 0 && len(req.TransferEncoding) == 0 && b.contentLengths == 1 && b.length != req.ContentLength {
			t.Fatalf("Go reads Content-Length %d, reqScan %d", req.ContentLength, b.length)
		}
	})
}

// BenchmarkReqScan measures noting a browser-sized header block.
func BenchmarkReqScan(b *testing.B) {
	block := []byte("GET /api/method/stock_balance?item=ABC HTTP/1.1\r\nHost: site1.example.com\r\n" +
		"User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36\r\n" +
		"Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8\r\nAccept-Language: en-US,en;q=0.5\r\n" +
		"Accept-Encoding: gzip, deflate\r\nCookie: sid=0123456789abcdef; system_user=yes; full_name=Someone\r\n\r\n")
	var s reqScan
	b.ReportAllocs()
	b.SetBytes(int64(len(block)))
	for b.Loop() {
		s.feed(block)
		s.next()
	}
}
