package limiterproxy

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

// readBoth reads raw as a response to method with readResponse and with
// http.ReadResponse, and reports how readResponse's differs, if at all,
// and whether readHead took the final head.
func readBoth(raw, method string, oneByte bool) (diff string, plain bool) {
	req := &http.Request{Method: method}
	src := func() io.Reader {
		if oneByte {
			return iotest.OneByteReader(strings.NewReader(raw))
		}
		return strings.NewReader(raw)
	}
	wantBR := bufio.NewReaderSize(src(), 4<<10)
	var want *http.Response
	var wantErr error
	for {
		want, wantErr = http.ReadResponse(wantBR, req)
		if wantErr != nil || want.StatusCode >= 200 || want.StatusCode == http.StatusSwitchingProtocols {
			break
		}
	}
	gotBR := bufio.NewReaderSize(src(), 4<<10)
	var resp http.Response
	var body knownBody
	got, gotErr := readResponse(gotBR, req, &resp, &body)
	if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
		return "error " + errString(gotErr) + ", want " + errString(wantErr), false
	}
	if gotErr != nil {
		return "", false
	}
	plain = got == &resp
	type fields struct {
		Status                   string
		StatusCode               int
		Proto                    string
		ProtoMajor, ProtoMinor   int
		Header, Trailer          http.Header
		ContentLength            int64
		TransferEncoding         []string
		Close, NoBody            bool
		Body, BodyErr, Remaining string
	}
	read := func(r *http.Response, br *bufio.Reader) fields {
		b, err := io.ReadAll(r.Body)
		rest, _ := io.ReadAll(br)
		r.Body.Close()
		return fields{r.Status, r.StatusCode, r.Proto, r.ProtoMajor, r.ProtoMinor, r.Header, r.Trailer,
			r.ContentLength, r.TransferEncoding, r.Close, r.Body == http.NoBody, string(b), errString(err), string(rest)}
	}
	g, w := read(got, gotBR), read(want, wantBR)
	if !reflect.DeepEqual(g, w) {
		return fmt.Sprintf("got  %+v\nwant %+v", g, w), plain
	}
	return "", plain
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// TestReadHead reads heads plain and not, well formed and not, beside
// http.ReadResponse: readResponse must give what it gives, field by field,
// the body and what follows it included, and take the plain ones itself.
func TestReadHead(t *testing.T) {
	const nginx = "HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Thu, 03 Dec 2026 07:36:15 GMT\r\n" +
		"Content-Type: text/plain\r\nContent-Length: 3\r\nConnection: keep-alive\r\n\r\nok\nNEXT"
	for _, tc := range []struct {
		name, raw, method string
		plain             bool
	}{
		{"nginx", nginx, "GET", true},
		{"HEAD with a length", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nNEXT", "HEAD", true},
		{"HEAD without", "HTTP/1.1 200 OK\r\n\r\nNEXT", "HEAD", true},
		{"204", "HTTP/1.1 204 No Content\r\nX: y\r\n\r\nNEXT", "GET", true},
		{"304 with a length", "HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\nNEXT", "GET", true},
		{"empty body", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\nNEXT", "GET", true},
		{"no reason", "HTTP/1.1 503\r\nContent-Length: 1\r\n\r\nx", "GET", true},
		{"reason with spaces", "HTTP/1.1 404  Not  Found \r\nContent-Length: 1\r\n\r\nx", "GET", true},
		{"close on 1.1", "HTTP/1.1 200 OK\r\nConnection: Close\r\nContent-Length: 2\r\n\r\nhi", "GET", true},
		{"close among tokens", "HTTP/1.1 200 OK\r\nConnection: x-a, close\r\nX-A: 1\r\nContent-Length: 2\r\n\r\nhi", "GET", true},
		{"1.0 closes", "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nhi", "GET", true},
		{"1.0 keep-alive", "HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\nhi", "GET", true},
		{"names in lower case", "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nx-request-id: 7\r\nX-Request-Id: 8\r\n\r\nhi", "GET", true},
		{"blanks around values", "HTTP/1.1 200 OK\r\nA:\t v \t\r\nB:\r\nContent-Length:  2 \r\n\r\nhi", "GET", true},
		{"short body", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", "GET", true},
		{"100 Continue first", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n" + nginx, "GET", true},

		// Left to http.ReadResponse, and read as it reads them.
		{"one byte a read", nginx, "GET", false},
		{"duplicate Content-Length, equal", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nhi", "GET", false},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\nNEXT", "GET", false},
		{"chunked with trailer", "HTTP/1.1 200 OK\r\nTrailer: X-T\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\nX-T: 1\r\n\r\n", "GET", false},
		{"chunked beside a length", "HTTP/1.1 200 OK\r\nContent-Length: 9\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n", "GET", false},
		{"up to the close", "HTTP/1.1 200 OK\r\n\r\nall of it", "GET", false},
		{"Pragma", "HTTP/1.1 200 OK\r\nPragma: no-cache\r\nContent-Length: 0\r\n\r\n", "GET", false},
		{"status 600", "HTTP/1.1 600 Odd\r\nContent-Length: 0\r\n\r\n", "GET", false},
		{"HTTP/1.2", "HTTP/1.2 200 OK\r\nContent-Length: 0\r\n\r\n", "GET", false},
		{"bare LF", "HTTP/1.1 200 OK\nContent-Length: 2\n\nhi", "GET", false},
		{"LF in the middle", "HTTP/1.1 200 OK\r\nA: b\n\r\nContent-Length: 2\r\n\r\nhi", "GET", false},
		{"space before colon", "HTTP/1.1 200 OK\r\nA : b\r\nContent-Length: 0\r\n\r\n", "GET", false},
		{"obs-text value", "HTTP/1.1 200 OK\r\nA: caf\xc3\xa9\r\nContent-Length: 0\r\n\r\n", "GET", false},
		{"obs-fold", "HTTP/1.1 200 OK\r\nA: b\r\n c\r\nContent-Length: 0\r\n\r\n", "GET", false},
		{"101", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: ws\r\nConnection: Upgrade\r\n\r\n", "GET", false},

		// Malformed: errors, the same.
		{"nothing", "", "GET", false},
		{"cut in the status line", "HTTP/1.1 20", "GET", false},
		{"cut in the head", "HTTP/1.1 200 OK\r\nContent-Len", "GET", false},
		{"two-digit status", "HTTP/1.1 20 OK\r\n\r\n", "GET", false},
		{"signed status", "HTTP/1.1 +20 OK\r\n\r\n", "GET", false},
		{"not HTTP", "SSH-2.0-OpenSSH\r\n\r\n", "GET", false},
		{"duplicate Content-Length, differing", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nhi", "GET", false},
		{"bad Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: 2x\r\n\r\nhi", "GET", false},
		{"signed Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nhi", "GET", false},
		{"empty Content-Length", "HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\nhi", "GET", false},
		{"bad Content-Length on a 304", "HTTP/1.1 304 Not Modified\r\nContent-Length: x\r\n\r\n", "GET", false},
		{"control byte", "HTTP/1.1 200 OK\r\nA: b\x01c\r\nContent-Length: 0\r\n\r\n", "GET", false},
		{"bad name", "HTTP/1.1 200 OK\r\nA(b: c\r\nContent-Length: 0\r\n\r\n", "GET", false},
		{"no colon", "HTTP/1.1 200 OK\r\nAb\r\nContent-Length: 0\r\n\r\n", "GET", false},
		{"empty name", "HTTP/1.1 200 OK\r\n: c\r\nContent-Length: 0\r\n\r\n", "GET", false},
		{"unknown transfer coding", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", "GET", false},
	} {
		diff, plain := readBoth(tc.raw, tc.method, tc.name == "one byte a read")
		if diff != "" {
			t.Errorf("%s: readResponse differs from http.ReadResponse:\n%s", tc.name, diff)
		}
		if plain != tc.plain {
			t.Errorf("%s: read by readHead = %v, want %v", tc.name, plain, tc.plain)
		}
	}
}

// FuzzReadHead checks readResponse against http.ReadResponse on any
// bytes, as the answer to a GET and to a HEAD.
func FuzzReadHead(f *testing.F) {
	f.Add("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\nConnection: keep-alive\r\n\r\nok\n", false)
	f.Add("HTTP/1.0 204 No Content\r\nconnection: close, keep-alive\r\ncontent-length: 7\r\n\r\n", true)
	f.Add("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 304 OK\r\nETag: \"x\"\r\n\r\n", false)
	f.Fuzz(func(t *testing.T, raw string, head bool) {
		method := "GET"
		if head {
			method = "HEAD"
		}
		if diff, _ := readBoth(raw, method, false); diff != "" {
			t.Errorf("%q as the answer to a %s: readResponse differs from http.ReadResponse:\n%s", raw, method, diff)
		}
	})
}
