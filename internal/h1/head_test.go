package h1

import "testing"

func TestHeadEnd(t *testing.T) {
	tests := []struct {
		in   string
		want int
	}{
		{"", -1},
		{"\r\n\r", -1},
		{"\r\n\r\n", 4},
		{"GET / HTTP/1.1\r\nHost: h\r\n", -1},
		{"GET / HTTP/1.1\r\nHost: h\r\n\r\n", 27},
		{"GET / HTTP/1.1\r\n\r\nGET /2 HTTP/1.1\r\n\r\n", 18}, // the first head of two
		{"GET / HTTP/1.1\n\nx\r\n\r\n", 21},                   // LF LF is not an end here
	}
	for _, tt := range tests {
		if got := HeadEnd([]byte(tt.in)); got != tt.want {
			t.Errorf("HeadEnd(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

// headEndByByte is HeadEnd written a byte at a time, as the floor proxy
// once had it.
func headEndByByte(b []byte) int {
	for i := 3; i < len(b); i++ {
		if b[i] == '\n' && b[i-1] == '\r' && b[i-2] == '\n' && b[i-3] == '\r' {
			return i + 1
		}
	}
	return -1
}

func FuzzHeadEnd(f *testing.F) {
	f.Add([]byte("GET / HTTP/1.1\r\nHost: h\r\n\r\n"))
	f.Add([]byte("\r\r\n\r\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := HeadEnd(b), headEndByByte(b); got != want {
			t.Errorf("HeadEnd(%q) = %d, want %d", b, got, want)
		}
	})
}

func TestEqualFold(t *testing.T) {
	tests := []struct {
		b, lower string
		want     bool
	}{
		{"Content-Length", "content-length", true},
		{"CONTENT-LENGTH", "content-length", true},
		{"content-length", "content-length", true},
		{"Content-Lengt", "content-length", false},
		{"Content-Lengths", "content-length", false},
		{"Host", "hast", false},
		{"", "", true},
		{"\xc1", "a", false}, // not ASCII: no folding beyond it
		{"[", "{", false},    // '[' is 'Z'+1: not a letter
	}
	for _, tt := range tests {
		if got := EqualFold([]byte(tt.b), tt.lower); got != tt.want {
			t.Errorf("EqualFold(%q, %q) = %v, want %v", tt.b, tt.lower, got, tt.want)
		}
	}
}
