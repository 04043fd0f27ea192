package h1

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

// readRequestBoth reads raw with readPlainRequest and with
// http.ReadRequest, and reports how the first differs, if it took the
// head at all, and whether it did.
func readRequestBoth(raw string) (diff string, plain bool) {
	wantBR := bufio.NewReaderSize(strings.NewReader(raw), 4<<10)
	want, wantErr := http.ReadRequest(wantBR)
	gotBR := bufio.NewReaderSize(strings.NewReader(raw), 4<<10)
	gotBR.Peek(1) //nolint:errcheck // fill the buffer, as the server's wait for a request does
	got, plain := readPlainRequest(gotBR)
	if !plain {
		return "", false
	}
	if wantErr != nil {
		return "took a head http.ReadRequest refuses: " + wantErr.Error(), true
	}
	type fields struct {
		Method, Proto, Host, RequestURI string
		ProtoMajor, ProtoMinor          int
		URL                             url.URL
		Header, Trailer                 http.Header
		ContentLength                   int64
		TransferEncoding                []string
		Close, NoBody                   bool
		Remaining                       string
	}
	read := func(r *http.Request, br *bufio.Reader) fields {
		rest, _ := io.ReadAll(br)
		return fields{r.Method, r.Proto, r.Host, r.RequestURI, r.ProtoMajor, r.ProtoMinor, *r.URL, r.Header, r.Trailer,
			r.ContentLength, r.TransferEncoding, r.Close, r.Body == http.NoBody, string(rest)}
	}
	if g, w := read(got, gotBR), read(want, wantBR); !reflect.DeepEqual(g, w) {
		return fmt.Sprintf("got  %+v\nwant %+v", g, w), true
	}
	return "", true
}

// TestReadPlainRequest reads request heads plain and not beside
// http.ReadRequest: readPlainRequest must give what it gives, field by
// field, and take the plain ones itself.
func TestReadPlainRequest(t *testing.T) {
	for _, tc := range []struct {
		name, raw string
		plain     bool
	}{
		{"wrk", "GET / HTTP/1.1\r\nHost: 127.0.0.1:9101\r\n\r\nGET /next", true},
		{"browser", "GET /a/b?x=1&y=%20 HTTP/1.1\r\nHost: site\r\nUser-Agent: Mozilla/5.0 (X11)\r\n" +
			"Accept: text/html,*/*;q=0.8\r\naccept-language: en\r\nCookie: a=1\r\nCookie: b=2\r\n\r\n", true},
		{"absolute URI", "GET http://other:81/p HTTP/1.1\r\nHost: site\r\n\r\n", true},
		{"no Host", "GET / HTTP/1.1\r\n\r\n", true},
		{"empty Host", "GET / HTTP/1.1\r\nHost:\r\n\r\n", true},
		{"1.0", "GET / HTTP/1.0\r\n\r\n", true},
		{"1.0 keep-alive", "HEAD / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", true},
		{"close", "DELETE /x HTTP/1.1\r\nHost: a\r\nConnection: foo, Close\r\n\r\n", true},
		{"OPTIONS *", "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n", true},
		{"blanks around values", "GET / HTTP/1.1\r\nHost: \ta \t\r\nX:\r\n\r\n", true},
		{"extension method", "PURGE /x HTTP/1.1\r\nHost: a\r\n\r\n", true},

		// Left to http.ReadRequest.
		{"not all buffered", "GET / HTTP/1.1\r\nHost: a\r\n", false},
		{"Content-Length", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhi", false},
		{"Content-Length 0", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n", false},
		{"chunked", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", false},
		{"Pragma", "GET / HTTP/1.1\r\nHost: a\r\nPragma: no-cache\r\n\r\n", false},
		{"two Hosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", false},
		{"CONNECT", "CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n", false},
		{"PRI", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", false},
		{"HTTP/2.0", "GET / HTTP/2.0\r\nHost: a\r\n\r\n", false},
		{"HTTP/1.2", "GET / HTTP/1.2\r\nHost: a\r\n\r\n", false},
		{"bare LF", "GET / HTTP/1.1\nHost: a\n\n", false},
		{"bare LF after the request line", "GET / HTTP/1.1\nHost: a\r\n\r\n", false},
		{"space in the URI", "GET /a b HTTP/1.1\r\nHost: a\r\n\r\n", false},
		{"two spaces", "GET  / HTTP/1.1\r\nHost: a\r\n\r\n", false},
		{"bad URI", "GET %zz HTTP/1.1\r\nHost: a\r\n\r\n", false},
		{"relative URI", "GET a/b HTTP/1.1\r\nHost: a\r\n\r\n", false},
		{"non-ASCII URI", "GET /caf\xc3\xa9 HTTP/1.1\r\nHost: a\r\n\r\n", false},
		{"bad method", "G(T / HTTP/1.1\r\nHost: a\r\n\r\n", false},
		{"obs-fold", "GET / HTTP/1.1\r\nHost: a\r\nX: b\r\n c\r\n\r\n", false},
		{"space before colon", "GET / HTTP/1.1\r\nHost : a\r\n\r\n", false},
		{"control byte", "GET / HTTP/1.1\r\nHost: a\x01\r\n\r\n", false},
		{"no colon", "GET / HTTP/1.1\r\nHost a\r\n\r\n", false},
	} {
		diff, plain := readRequestBoth(tc.raw)
		if diff != "" {
			t.Errorf("%s: readPlainRequest differs from http.ReadRequest:\n%s", tc.name, diff)
		}
		if plain != tc.plain {
			t.Errorf("%s: read by readPlainRequest = %v, want %v", tc.name, plain, tc.plain)
		}
	}
}

// FuzzReadPlainRequest checks readPlainRequest against http.ReadRequest on
// any bytes: whatever it takes, http.ReadRequest reads the same way.
func FuzzReadPlainRequest(f *testing.F) {
	f.Add("GET /a?b=c HTTP/1.1\r\nHost: site:80\r\nUser-Agent: x\r\nconnection: close\r\n\r\n")
	f.Add("HEAD http://h/p HTTP/1.0\r\nConnection: keep-alive\r\nX: \t\r\n\r\n")
	f.Fuzz(func(t *testing.T, raw string) {
		if diff, _ := readRequestBoth(raw); diff != "" {
			t.Errorf("%q: readPlainRequest differs from http.ReadRequest:\n%s", raw, diff)
		}
	})
}
