package h1

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// answers are answers to a GET as servers write them, each followed by
// what the connection carries after it ("" when it ends there).
var answers = []struct {
	name, wire string
}{
	{"length", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nX-A: 1\r\n\r\nok\n"},
	{"no body", "HTTP/1.1 204 No Content\r\nX-A: 2\r\n\r\n"},
	{"not modified", "HTTP/1.1 304 Not Modified\r\nContent-Length: 7\r\n\r\n"},
	{"close", "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 2\r\n\r\nno"},
	{"chunked", "HTTP/1.1 202 Accepted\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\na;ext=1\r\n0123456789\r\n0\r\nTrailer: x\r\n\r\n"},
	{"chunked upper hex, no trailer", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1A\r\n" + strings.Repeat("z", 26) + "\r\n0\r\n\r\n"},
	{"to the end", "HTTP/1.1 200 OK\r\nX-A: 3\r\n\r\nthe body runs to the end"},
	{"HTTP/1.0", "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok"},
	{"HTTP/1.0 keep-alive", "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok"},
	{"1xx first", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"},
	{"LF only", "HTTP/1.1 200 OK\nContent-Length: 1\nX-A: 4\n\nx"},
	{"empty length", "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n"},
	{"malformed status", "HTTP/1.1 2x0 OK\r\n\r\n"},
	{"malformed length", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n"},
	{"malformed chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"},
	{"chunk without CRLF", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabX\r\n0\r\n\r\n"},
	{"cut in the body", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort"},
	{"cut in the head", "HTTP/1.1 200 OK\r\nContent-Len"},
	{"cut in a chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab"},
	{"chunk line with bare LF", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\nab\r\n0\r\n\r\n"},
	{"last chunk line with bare LF", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\n\r\n"},
	{"chunk size, space", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2 \t\r\nab\r\n0\r\n\r\n"},
	{"chunk size, space, extension", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2 ;x\r\nab\r\n0\r\n\r\n"},
	{"chunk size, space, more", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2 2\r\nab\r\n0\r\n\r\n"},
	{"chunk extension with CR", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;a\rb\r\nab\r\n0\r\n\r\n"},
	{"chunk size of 16 digits", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0000000000000002\r\nab\r\n0\r\n\r\n"},
	{"chunk size of 17 digits", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n00000000000000002\r\nab\r\n0\r\n\r\n"},
	{"chunk extensions, 16 KiB", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + strings.Repeat("1;"+strings.Repeat("e", 1000)+"\r\nx\r\n", 16) + "0\r\n\r\n"},
	{"chunk extensions, 17 KiB", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + strings.Repeat("1;"+strings.Repeat("e", 1000)+"\r\nx\r\n", 17) + "0\r\n\r\n"},
	{"trailer line of 4095", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n" + strings.Repeat("t", 4095) + "\n\r\n"},
	{"trailer line of 4096", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n" + strings.Repeat("t", 4096) + "\n\r\n"},
}

// want is what readAnswer, GetBy's reader, makes of wire followed by the
// connection's end.
type want struct {
	status  int
	keep    bool
	err     bool
	headers string
	used    int // the bytes it read of wire
}

func readWhole(wire string) want {
	var w want
	r := strings.NewReader(wire)
	br := bufio.NewReaderSize(r, 4096)
	var hs strings.Builder
	st, keep, err := readAnswer(br, func(name, value []byte) { fmt.Fprintf(&hs, "%s=%s;", name, value) })
	w.status, w.keep, w.err, w.headers = st, keep, err != nil, hs.String()
	w.used = len(wire) - r.Len() - br.Buffered()
	return w
}

// TestAnswer feeds each answer to Answer cut at every place in two, and a
// byte at a time, and holds what it reads to what readAnswer reads of the
// same bytes: status, keep, the headers seen, an error or not, and the
// bytes taken.
func TestAnswer(t *testing.T) {
	for _, c := range answers {
		w := readWhole(c.wire)
		cuts := [][]int{}
		for i := 0; i <= len(c.wire); i++ {
			cuts = append(cuts, []int{i})
		}
		every := []int{}
		for i := 1; i < len(c.wire); i++ {
			every = append(every, i)
		}
		cuts = append(cuts, every)
		for _, cut := range cuts {
			var hs strings.Builder
			a := Answer{Header: func(name, value []byte) { fmt.Fprintf(&hs, "%s=%s;", name, value) }}
			used, done, failed := 0, false, false
			from := 0
			for _, to := range append(append([]int{}, cut...), len(c.wire)) {
				if to < from || done || failed {
					continue
				}
				n, d, err := a.Feed([]byte(c.wire[from:to]))
				used += n
				done, failed = d, err != nil
				from = to
			}
			if !done && !failed {
				d, err := a.End()
				done, failed = d, err != nil
				if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Errorf("%s cut at %v: End() = %v, want io.ErrUnexpectedEOF", c.name, cut, err)
				}
			}
			if failed != w.err {
				t.Errorf("%s cut at %v: failed %v, want %v (readAnswer's)", c.name, cut, failed, w.err)
				continue
			}
			if failed {
				continue
			}
			if a.Status() != w.status || a.Keep() != w.keep || hs.String() != w.headers || used != w.used {
				t.Errorf("%s cut at %v: status %d keep %v headers %q used %d; want %d %v %q %d",
					c.name, cut, a.Status(), a.Keep(), hs.String(), used, w.status, w.keep, w.headers, w.used)
			}
		}
	}
}

// TestAnswerPast checks that Answer leaves the bytes after an answer, and
// reads the next after Reset.
func TestAnswerPast(t *testing.T) {
	wire := []byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
	var a Answer
	n, done, err := a.Feed(wire)
	if err != nil || !done || a.Status() != 200 || n != 40 {
		t.Fatalf("first: Feed = %d, %v, %v, status %d; want 40, true, nil, 200", n, done, err, a.Status())
	}
	a.Reset()
	if a.Started() {
		t.Errorf("after Reset: Started() = true, want false")
	}
	n2, done, err := a.Feed(wire[n:])
	if err != nil || !done || a.Status() != 404 || n+n2 != len(wire) {
		t.Errorf("second: Feed = %d, %v, %v, status %d; want %d, true, nil, 404", n2, done, err, a.Status(), len(wire)-n)
	}
}

func TestAppendGet(t *testing.T) {
	var b strings.Builder
	bw := bufio.NewWriter(&b)
	writeGet(bw, "/a?b=1", "h.example")
	bw.Flush()
	if got := string(AppendGet(nil, "/a?b=1", "h.example")); got != b.String() {
		t.Errorf("AppendGet = %q, want writeGet's %q", got, b.String())
	}
}

// FuzzAnswer holds Answer to readAnswer on any bytes, fed whole and cut in
// two at cut: an error or not, and for an answer read whole its status,
// keep, headers and the bytes taken.
func FuzzAnswer(f *testing.F) {
	for _, c := range answers {
		f.Add(c.wire, len(c.wire)/2)
	}
	f.Fuzz(func(t *testing.T, wire string, cut int) {
		w := readWhole(wire)
		if cut < 0 || cut > len(wire) {
			cut = len(wire) / 2
		}
		var hs strings.Builder
		a := Answer{Header: func(name, value []byte) { fmt.Fprintf(&hs, "%s=%s;", name, value) }}
		used, done, failed := 0, false, false
		for _, p := range []string{wire[:cut], wire[cut:]} {
			if done || failed || p == "" {
				continue
			}
			n, d, err := a.Feed([]byte(p))
			used += n
			done, failed = d, err != nil
		}
		if !done && !failed {
			d, err := a.End()
			done, failed = d, err != nil
		}
		if failed != w.err {
			t.Fatalf("%q cut at %d: failed %v, want %v (readAnswer's)", wire, cut, failed, w.err)
		}
		if !failed && (a.Status() != w.status || a.Keep() != w.keep || hs.String() != w.headers || used != w.used) {
			t.Fatalf("%q cut at %d: status %d keep %v headers %q used %d; want %d %v %q %d",
				wire, cut, a.Status(), a.Keep(), hs.String(), used, w.status, w.keep, w.headers, w.used)
		}
	})
}

// TestAnswerStarted checks that an answer has begun once any byte of it
// came, a whole 1xx head among them, and not before.
func TestAnswerStarted(t *testing.T) {
	for _, wire := range []string{"H", "HTTP/1.1 100 Continue\r\n\r\n", "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 2"} {
		var a Answer
		if a.Started() {
			t.Errorf("%q: Started() = true before any byte", wire)
		}
		if _, done, err := a.Feed([]byte(wire)); done || err != nil {
			t.Fatalf("%q: Feed = done %v, %v; want more to come", wire, done, err)
		}
		if !a.Started() {
			t.Errorf("%q: Started() = false after it came", wire)
		}
	}
}
