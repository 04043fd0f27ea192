package accesslog

import (
	"strings"
	"testing"
	"time"
)

const testFormat = `log_format stampede '$host $remote_addr [$time_local] "$request" $status $body_bytes_sent $msec $request_time $upstream_response_time $upstream_status "$http_user_agent"';`

func mustNginx(t testing.TB, src string) *Format {
	t.Helper()
	f, err := CompileNginx(src, NginxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestParseNginx(t *testing.T) {
	for _, tc := range []struct {
		name, format, line string
		check              func(t *testing.T, e *Entry)
	}{
		{"combined", "combined", `10.0.0.1 - - [01/Dec/2026:23:04:38 +0100] "GET /app/item/12?x=1 HTTP/1.1" 200 512 "-" "Mozilla/5.0 (X11)"`, func(t *testing.T, e *Entry) {
			want := time.Date(2026, 12, 1, 22, 4, 38, 0, time.UTC).UnixNano()
			if e.End != want || e.Precision != time.Second {
				t.Errorf("End, Precision = %d, %v; want %d, 1s", e.End, e.Precision, want)
			}
			if string(e.Addr) != "10.0.0.1" || string(e.Path) != "/app/item/12" || string(e.Method) != "GET" || e.Status != 200 || e.BodyBytes != 512 {
				t.Errorf("Addr, Path, Method, Status, BodyBytes = %q, %q, %q, %d, %d", e.Addr, e.Path, e.Method, e.Status, e.BodyBytes)
			}
			if e.RequestTime != Unknown || e.Host != nil {
				t.Errorf("RequestTime, Host = %v, %q; want unknown, nil", e.RequestTime, e.Host)
			}
		}},
		{"msec and upstream list", testFormat, `Site1.Example.COM:8080 127.0.0.1 [01/Dec/2026:23:04:38 +0000] "POST /api/method/run HTTP/1.1" 504 0 1796166278.250 60.001 0.002, 30.000 : 29.999 502, 504 "curl \x22quoted\x22"`, func(t *testing.T, e *Entry) {
			if e.End != 1796166278250000000 || e.Precision != time.Millisecond {
				t.Errorf("End, Precision = %d, %v; want the $msec value, 1ms", e.End, e.Precision)
			}
			if string(e.Host) != "site1.example.com" {
				t.Errorf("Host = %q, want site1.example.com (lower case, no port)", e.Host)
			}
			if e.RequestTime != 60001*time.Millisecond || e.Upstream != 29999*time.Millisecond || e.Tries != 3 || e.UpstreamStatus != 504 {
				t.Errorf("RequestTime, Upstream, Tries, UpstreamStatus = %v, %v, %d, %d", e.RequestTime, e.Upstream, e.Tries, e.UpstreamStatus)
			}
		}},
		{"upstream dash", testFormat, `a 127.0.0.1 [01/Dec/2026:23:04:38 +0000] "GET / HTTP/1.1" 503 0 1796166278.000 0.000 - - "-"`, func(t *testing.T, e *Entry) {
			if e.Upstream != Unknown || e.UpstreamStatus != 0 || e.Status != 503 {
				t.Errorf("Upstream, UpstreamStatus, Status = %v, %d, %d; want unknown, 0, 503", e.Upstream, e.UpstreamStatus, e.Status)
			}
		}},
		{"escaped path", `$host "$request" $status`, `a "GET /caf\xC3\xA9/\x22x HTTP/1.1" 200`, func(t *testing.T, e *Entry) {
			if string(e.Path) != "/café/\"x" {
				t.Errorf("Path = %q, want the escapes undone", e.Path)
			}
		}},
		{"escape=json", `log_format j escape=json '{"host":"$host","t":$msec,"req":"$request","rt":$request_time,"s":$status,"ua":"$http_user_agent"}';`, `{"host":"a.example.com","t":1796166278.5,"req":"GET /x\"y HTTP/1.1","rt":0.5,"s":200,"ua":"say \"hi\", \\ bye"}`, func(t *testing.T, e *Entry) {
			if string(e.Host) != "a.example.com" || string(e.Path) != `/x"y` || e.RequestTime != 500*time.Millisecond || e.Status != 200 {
				t.Errorf("Host, Path, RequestTime, Status = %q, %q, %v, %d", e.Host, e.Path, e.RequestTime, e.Status)
			}
		}},
		{"iso8601 and method+uri", `$time_iso8601 $request_method $request_uri $status $http_host`, `2026-12-01T23:04:38-02:00 GET /a/b?c 200 x.example.com.`, func(t *testing.T, e *Entry) {
			want := time.Date(2026, 12, 2, 1, 4, 38, 0, time.UTC).UnixNano()
			if e.End != want || string(e.Path) != "/a/b" || string(e.Method) != "GET" || string(e.Host) != "x.example.com" {
				t.Errorf("End, Path, Method, Host = %d, %q, %q, %q; want %d, /a/b, GET, x.example.com", e.End, e.Path, e.Method, e.Host, want)
			}
		}},
		{"msec wins over time_local in any order", `$msec [$time_local] $request_uri`, `1796166278.123 [01/Dec/2026:23:04:38 +0000] /`, func(t *testing.T, e *Entry) {
			if e.End != 1796166278123000000 {
				t.Errorf("End = %d, want the $msec value", e.End)
			}
		}},
		{"braced variable and ignored ones", `${host}|$connection|$ssl_protocol|$cookie_sid|$request_uri|$request_time`, `a.b|42|TLSv1.3|xyz|/p|1.5`, func(t *testing.T, e *Entry) {
			if string(e.Host) != "a.b" || e.RequestTime != 1500*time.Millisecond {
				t.Errorf("Host, RequestTime = %q, %v", e.Host, e.RequestTime)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := mustNginx(t, tc.format)
			var e Entry
			if err := f.Parse([]byte(tc.line), &e); err != nil {
				t.Fatalf("Parse: %v", err)
			}
			tc.check(t, &e)
		})
	}
}

func TestParseGunicorn(t *testing.T) {
	for _, tc := range []struct {
		format, line string
		want         time.Duration
		host, path   string
	}{
		{GunicornWorkerTime, `127.0.0.1 - - [01/Dec/2026:23:04:38 +0000] "GET /api/method/x?y=1 HTTP/1.0" 200 33 "-" "Go-http-client/1.1" 123456 "site2.example.com"`, 123456 * time.Microsecond, "site2.example.com", "/api/method/x"},
		{`%(h)s %(t)s "%(r)s" %(s)s %(L)s`, `10.1.1.1 [01/Dec/2026:23:04:38 +0000] "GET / HTTP/1.1" 200 2.500001`, 2500001 * time.Microsecond, "", "/"},
		{`%(U)s %(M)s %(T)s`, `/x 1500 1`, time.Second, "", "/x"}, // the last time atom wins
		{`%(U)s %%(D)s %(D)s`, `/x %(D)s 7`, 7 * time.Microsecond, "", "/x"},
	} {
		f, err := CompileGunicorn(tc.format)
		if err != nil {
			t.Fatalf("CompileGunicorn(%q): %v", tc.format, err)
		}
		var e Entry
		if err := f.Parse([]byte(tc.line), &e); err != nil {
			t.Fatalf("%q: Parse: %v", tc.format, err)
		}
		if e.RequestTime != tc.want || string(e.Host) != tc.host || string(e.Path) != tc.path {
			t.Errorf("%q: RequestTime, Host, Path = %v, %q, %q; want %v, %q, %q", tc.format, e.RequestTime, e.Host, e.Path, tc.want, tc.host, tc.path)
		}
	}
}

// TestBad holds every kind of bad format and bad line to the error that
// names it.
func TestBad(t *testing.T) {
	formats := []struct{ name, format, want string }{
		{"unknown variable", `$host $reqeust_time`, `$reqeust_time is not an nginx variable (did you mean $request_time?)`},
		{"unclosed brace", `$host ${request_time`, "has no closing }"},
		{"lone dollar", `$host $ $status`, "names no variable"},
		{"adjacent variables", `$host$request_uri`, "follow each other with nothing between them"},
		{"no variables", `just text`, "no variables"},
		{"unclosed quote", `log_format main '$host $status`, "is not closed"},
		{"bad escape", `log_format main escape=xml '$host';`, "escape=xml is not default, json or none"},
		{"directive without name", `log_format`, "without a name"},
		{"directive without string", `log_format main;`, "has no format string"},
		{"text after directive", `log_format main '$host' ; extra`, "after the quoted strings"},
		{"gunicorn unknown atom", `%(h)s %(Z)s`, "%(Z)s is not a gunicorn atom"},
		{"gunicorn unclosed atom", `%(h)s %(D`, "is not closed by )s"},
	}
	for _, tc := range formats {
		var err error
		if strings.Contains(tc.format, "%(") {
			_, err = CompileGunicorn(tc.format)
		} else {
			_, err = CompileNginx(tc.format, NginxOptions{})
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("format %s (%q): error %v, want one saying %q", tc.name, tc.format, err, tc.want)
		}
	}
	f := mustNginx(t, testFormat)
	good := `a.example.com 127.0.0.1 [01/Dec/2026:23:04:38 +0000] "GET / HTTP/1.1" 200 5 1796166278.250 0.010 0.009 200 "ua"`
	if err := f.Parse([]byte(good), new(Entry)); err != nil {
		t.Fatalf("the good line: %v", err)
	}
	lines := []struct{ name, line, want string }{
		{"empty", "", `a host for $host`},
		{"truncated", good[:40], "a time like"},
		{"bad month", strings.Replace(good, "Dec", "Dez", 1), "a time like 01/Dec/2026"},
		{"bad hour", strings.Replace(good, "23:04", "25:04", 1), "a time like"},
		{"bad zone", strings.Replace(good, "+0000", "UTC00", 1), "a time like"},
		{"status not a number", strings.Replace(good, " 200 5 ", " OK 5 ", 1), "a status like 200 for $status"},
		{"status too long", strings.Replace(good, " 200 5 ", " 2000 5 ", 1), "a status like 200 for $status"},
		{"bytes negative", strings.Replace(good, " 200 5 ", " 200 -5 ", 1), "a byte count like 512 for $body_bytes_sent"},
		{"msec garbage", strings.Replace(good, "1796166278.250", "17961x6278.250", 1), "seconds since 1970"},
		{"request time garbage", strings.Replace(good, " 0.010 ", " fast ", 1), "seconds like 0.123 for $request_time"},
		{"upstream list cut", strings.Replace(good, " 0.009 200 ", " 0.009, 200 ", 1), "for $upstream_status"},
		{"upstream status word", strings.Replace(good, " 0.009 200 ", " 0.009 abc ", 1), "for $upstream_status"},
		{"missing quote", strings.Replace(good, `"ua"`, `ua`, 1), `\""`},
		{"trailing text", good + " more", "the end of the line"},
		{"missing bracket", strings.Replace(good, "[", "", 1), `an address for $remote_addr`},
		{"msec trailing dot", strings.Replace(good, "1796166278.250", "1796166278.", 1), "seconds since 1970"},
	}
	for _, tc := range lines {
		err := f.Parse([]byte(tc.line), new(Entry))
		le, ok := err.(*LineError)
		if !ok || !strings.Contains(le.Want, strings.TrimPrefix(tc.want, "want ")) && !strings.Contains(le.Error(), tc.want) {
			t.Errorf("line %s: error %v, want one saying %q", tc.name, err, tc.want)
		}
	}
	if n := len(formats) + len(lines); n < 15 {
		t.Errorf("%d kinds of bad input, want at least 15", n)
	}
}

// normalPaths are paths and their normal forms: TestNormalPath's table,
// and seeds of FuzzNormalPath.
var normalPaths = []struct{ in, want string }{
	{"/", "/"},
	{"", "/"},
	{"/app/sales-invoice/SINV-2026-00012", "/app/sales-invoice/{id}"},
	{"/app/item/12", "/app/item/{id}"},
	{"/files/3f2504e0-4f89-11d3-9a0c-0305e82c3301/x", "/files/{id}/x"},
	{"/assets/bundle.0123456789abcdef.js", "/assets/{id}"},
	{"/api/method/frappe.desk.query_report.run", "/api/method/frappe.desk.query_report.run"},
	{"/api/method/erpnext.v2.stock_balance/extra", "/api/method/erpnext.v2.stock_balance"},
	{"/api/resource/Sales Invoice/SINV-00001", "/api/resource/Sales Invoice/{id}"},
	{"/app/item/", "/app/item"},
	{"//double//slash", "/double/slash"},
	{"/v2/app", "/v2/app"},
	{"/api/method/frappe.client.get_list%20x", "/api/method/frappe.client.get_list"},
	{"/assets/js/desk.bundle.0a1b2c3d.js", "/assets/js/{id}"},
	{"/assets/js/desk.bundle.js", "/assets/js/desk.bundle.js"},
	{"/app/face-book", "/app/face-book"},
	{"/files/report-2026.pdf", "/files/report-2026.pdf"},
}

func TestNormalPath(t *testing.T) {
	for _, tc := range normalPaths {
		if got := string(NormalPath(nil, []byte(tc.in))); got != tc.want {
			t.Errorf("NormalPath(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// fuzzCompile fuzzes a compiler: a format it refuses gets an error that
// names the format by label, one it takes parses any line.
func fuzzCompile(f *testing.F, label string, compile func(string) (*Format, error), formats []string, line string) {
	for _, s := range formats {
		f.Add(s, line)
	}
	f.Fuzz(func(t *testing.T, format, line string) {
		c, err := compile(format)
		if err != nil {
			if !strings.Contains(err.Error(), label) {
				t.Fatalf("compiling %q: error %q does not name the %s", format, err, label)
			}
			return
		}
		var e Entry
		_ = c.Parse([]byte(line), &e)
	})
}

func FuzzCompileNginx(f *testing.F) {
	compile := func(s string) (*Format, error) { return CompileNginx(s, NginxOptions{}) }
	fuzzCompile(f, "log format", compile, []string{Combined, testFormat, "combined", `log_format j escape=json '{"h":"$host"}';`, `${host}x$msec`, `$`, `log_format a '`, `'$host' "$status"`},
		`a.example.com 127.0.0.1 [01/Dec/2026:23:04:38 +0000] "GET / HTTP/1.1" 200 5 1796166278.250 0.010 0.009 200 "ua"`)
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`a.example.com 127.0.0.1 [01/Dec/2026:23:04:38 +0000] "GET / HTTP/1.1" 200 5 1796166278.250 0.010 0.009 200 "ua"`,
		`Site1.Example.COM:8080 127.0.0.1 [01/Dec/2026:23:04:38 +0000] "POST /api/method/run HTTP/1.1" 504 0 1796166278.250 60.001 0.002, 30.000 : 29.999 502, 504 "curl \x22quoted\x22"`,
		`a 127.0.0.1 [29/Feb/2028:00:00:00 -1200] "-" 400 0 0.0 - - - "-"`,
	} {
		f.Add(s)
	}
	formats := []*Format{mustNginx(f, testFormat), mustNginx(f, `log_format j escape=json '{"h":"$host","r":"$request","t":$msec}';`)}
	g, _ := CompileGunicorn(GunicornWorkerTime)
	formats = append(formats, g)
	f.Fuzz(func(t *testing.T, line string) {
		for _, c := range formats {
			var e Entry
			err := c.Parse([]byte(line), &e)
			if err != nil {
				if _, ok := err.(*LineError); !ok {
					t.Fatalf("Parse(%q): error %T, want *LineError", line, err)
				}
				continue
			}
			if e.RequestTime < Unknown || e.Upstream < Unknown || e.Status != 0 && (e.Status < 100 || e.Status > 999) {
				t.Fatalf("Parse(%q) = %+v: a value out of range", line, e)
			}
		}
	})
}

func FuzzCompileGunicorn(f *testing.F) {
	fuzzCompile(f, "gunicorn log format", CompileGunicorn, []string{GunicornDefault, GunicornWorkerTime, `%(D`, `%%(D)s %(D)s`, `%({host}i)s %(L)s`, `%({x}z)s`},
		`127.0.0.1 - - [01/Dec/2026:23:04:38 +0000] "GET / HTTP/1.0" 200 33 "-" "Go" 123456 "site2"`)
}

func FuzzNormalPath(f *testing.F) {
	for _, s := range []string{"/", "/app/item/12", "/api/method/frappe.x?y", "//a//b/", "/assets/x.0a1b2c3d.js", "/files/3f2504e0-4f89-11d3-9a0c-0305e82c3301"} {
		f.Add(s)
	}
	for _, tc := range normalPaths {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, p string) {
		once := NormalPath(nil, []byte(p))
		if len(once) == 0 || once[0] != '/' {
			t.Fatalf("NormalPath(%q) = %q, want a path from /", p, once)
		}
		if twice := NormalPath(nil, once); string(twice) != string(once) {
			t.Fatalf("NormalPath(%q) = %q, but NormalPath of that is %q", p, once, twice)
		}
		// The one-pass counters agree with isID's, segment by segment.
		b := []byte(p)
		for i := 0; i < len(b); i++ {
			if b[i] == '/' {
				continue
			}
			j, id := pathSegment(b, i)
			if want := isID(b[i:j]); id != want || j < len(b) && b[j] != '/' {
				t.Fatalf("pathSegment(%q, %d) = %d, %v; want the segment's end, %v", p, i, j, id, want)
			}
			i = j
		}
	})
}

// TestNormalPathLong: a segment too long for the one-pass counters is
// read by isID, with the same outcome.
func TestNormalPathLong(t *testing.T) {
	for _, tc := range []struct{ seg, want string }{
		{strings.Repeat("ab", 40000), "/x/" + strings.Repeat("ab", 40000) + "/y"},
		{strings.Repeat("1", 70000), "/x/{id}/y"},
		{strings.Repeat("a1-", 30000), "/x/{id}/y"},
	} {
		if got := NormalPath(nil, []byte("/x/"+tc.seg+"/y")); string(got) != tc.want {
			t.Errorf("NormalPath of a %d-byte segment = %.40q..., want %.40q...", len(tc.seg), got, tc.want)
		}
	}
}
