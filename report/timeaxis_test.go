package report

import (
	"bytes"
	"image"
	"image/png"
	"testing"
)

// axisSpan returns the first and last x of the longest horizontal run of
// dark grey pixels in img: a chart's x axis line (anti-aliased, so grey).
func axisSpan(img image.Image) (x0, x1 int) {
	b := img.Bounds()
	best := -1
	for y := b.Min.Y; y < b.Max.Y; y++ {
		run, start := 0, 0
		for x := b.Min.X; x <= b.Max.X; x++ {
			dark := false
			if x < b.Max.X {
				r, g, bl, _ := img.At(x, y).RGBA()
				grey := max(r, g, bl)-min(r, g, bl) < 0x1000
				dark = grey && r < 0xb000
			}
			if dark {
				if run == 0 {
					start = x
				}
				run++
				continue
			}
			if run > best {
				best, x0, x1 = run, start, x-1
			}
			run = 0
		}
	}
	return x0, x1
}

// TestTimeChartsShareAxis: the charts against model time, stacked in the
// report, have their time axes at the same pixels.
func TestTimeChartsShareAxis(t *testing.T) {
	charts, err := runCharts(synthResults(250), formatPNG)
	if err != nil {
		t.Fatal(err)
	}
	var want [2]int
	var first string
	n := 0
	for _, ch := range charts {
		switch ch.Name {
		case "latency-time", "outcomes", "backend", "keys":
		default:
			continue
		}
		img, err := png.Decode(bytes.NewReader(ch.PNG))
		if err != nil {
			t.Fatal(err)
		}
		x0, x1 := axisSpan(img)
		if x1-x0 < ch.Width/2 {
			t.Fatalf("chart %s: x axis %d..%d px: no axis line found", ch.Name, x0, x1)
		}
		n++
		if first == "" {
			want, first = [2]int{x0, x1}, ch.Name
			continue
		}
		if [2]int{x0, x1} != want {
			t.Errorf("chart %s: time axis at %d..%d px, chart %s at %d..%d", ch.Name, x0, x1, first, want[0], want[1])
		}
	}
	if n < 3 {
		t.Errorf("%d time charts drawn, want at least 3", n)
	}
}
