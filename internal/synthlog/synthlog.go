package synthlog

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"time"
)

// Format is the log_format Write writes.
const Format = `log_format synth '$host $remote_addr - - [$time_local] "$request" $status $body_bytes_sent $msec $request_time $upstream_response_time "$http_referer" "$http_user_agent"';`

// Write writes n lines of a made-up incident in Format, for
// benchmarks: 250 sites at 50 requests a second in all, one of them
// opening slow reports, pages under the usual paths. It is deterministic
// for its seed.
func Write(w io.Writer, n int, seed uint64) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	rng := rand.New(rand.NewPCG(seed, 1))
	start := time.Date(2026, 12, 1, 14, 0, 0, 0, time.UTC)
	paths := []string{"/app/sales-invoice/SINV-2026-%05d", "/api/method/frappe.desk.form.load.getdoc?doctype=Item&name=%d", "/api/method/frappe.client.get_list?limit=%d", "/assets/frappe/dist/js/desk.bundle.%08x.js", "/app/item/%d", "/api/resource/Item/%d"}
	var b []byte
	t := 0.0
	for i := range n {
		t += rng.ExpFloat64() / 50
		site := rng.IntN(250)
		path := fmt.Sprintf(paths[rng.IntN(len(paths))], rng.IntN(100000))
		rt := rng.ExpFloat64() * 0.05
		if site == 7 && rng.IntN(20) == 0 {
			path = "/api/method/erpnext.stock.report.stock_balance.stock_balance.execute"
			rt = 120 + rng.Float64()*120
		}
		end := start.Add(time.Duration((t + rt) * float64(time.Second)))
		b = b[:0]
		b = fmt.Appendf(b, "site%d.example.com 10.0.%d.%d - - [", site, site%200, i%250)
		b = end.AppendFormat(b, "02/Jan/2006:15:04:05 -0700")
		b = fmt.Appendf(b, `] "GET %s HTTP/1.1" 200 %d `, path, 500+rng.IntN(20000))
		b = strconv.AppendInt(b, end.Unix(), 10)
		b = fmt.Appendf(b, ".%03d %.3f %.3f \"-\" \"Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0\"\n", end.Nanosecond()/1e6, rt, rt*0.98)
		if _, err := bw.Write(b); err != nil {
			return err
		}
	}
	return bw.Flush()
}
