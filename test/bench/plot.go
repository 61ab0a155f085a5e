package bench

import (
	"image"
	"image/color"
	"image/png"
	"io"
	"strconv"
	"time"
)

// Series is one line of the plot: a value per pool size.
type Series struct {
	Name   string
	Color  color.RGBA
	Values []time.Duration // one per x
}

// PlotPNG draws the series against the pool sizes xs (evenly spaced, as
// categories) and writes a PNG: white background, axes, horizontal grid
// lines with their millisecond values, each series as a line with dots,
// and the pool sizes under the x axis. Labels are drawn with a built-in
// 3x5 digit font, so it needs no font files.
func PlotPNG(w io.Writer, xs []int, series []Series) error {
	const width, height, left, right, top, bottom = 640, 360, 70, 20, 20, 40
	img := image.NewRGBA(image.Rect(0, 0, width, height))
	fill(img, img.Bounds(), color.RGBA{255, 255, 255, 255})
	maxV := time.Duration(1)
	for _, s := range series {
		for _, v := range s.Values {
			maxV = max(maxV, v)
		}
	}
	step := niceStep(maxV / 5)
	top5 := step * time.Duration((maxV+step-1)/step)
	plotW, plotH := width-left-right, height-top-bottom
	y := func(v time.Duration) int { return top + plotH - int(float64(plotH)*float64(v)/float64(top5)) }
	x := func(i int) int {
		if len(xs) == 1 {
			return left + plotW/2
		}
		return left + 20 + i*(plotW-40)/(len(xs)-1)
	}
	grid := color.RGBA{220, 220, 220, 255}
	black := color.RGBA{0, 0, 0, 255}
	for v := time.Duration(0); v <= top5; v += step {
		line(img, left, y(v), width-right, y(v), grid)
		text(img, left-8, y(v)-5, strconv.FormatInt(v.Milliseconds(), 10), black, true)
	}
	line(img, left, top, left, top+plotH, black)
	line(img, left, top+plotH, width-right, top+plotH, black)
	for i, n := range xs {
		line(img, x(i), top+plotH, x(i), top+plotH+4, black)
		text(img, x(i), top+plotH+10, strconv.Itoa(n), black, false)
	}
	for si, s := range series {
		for i, v := range s.Values {
			if i > 0 {
				line(img, x(i-1), y(s.Values[i-1]), x(i), y(v), s.Color)
			}
			fill(img, image.Rect(x(i)-3, y(v)-3, x(i)+4, y(v)+4), s.Color)
		}
		fill(img, image.Rect(left+10+si*20, top+4, left+20+si*20, top+14), s.Color) // legend swatch, in series order
	}
	return png.Encode(w, img)
}

// niceStep rounds d up to 1, 2 or 5 times a power of ten milliseconds.
func niceStep(d time.Duration) time.Duration {
	step := time.Millisecond
	for {
		for _, m := range []time.Duration{1, 2, 5} {
			if m*step >= d {
				return m * step
			}
		}
		step *= 10
	}
}

func fill(img *image.RGBA, r image.Rectangle, c color.RGBA) {
	r = r.Intersect(img.Bounds())
	for py := r.Min.Y; py < r.Max.Y; py++ {
		for px := r.Min.X; px < r.Max.X; px++ {
			img.SetRGBA(px, py, c)
		}
	}
}

// line draws a straight line (Bresenham).
func line(img *image.RGBA, x0, y0, x1, y1 int, c color.RGBA) {
	dx, dy := abs(x1-x0), -abs(y1-y0)
	sx, sy := sign(x1-x0), sign(y1-y0)
	e := dx + dy
	for {
		if (image.Point{x0, y0}).In(img.Bounds()) {
			img.SetRGBA(x0, y0, c)
		}
		if x0 == x1 && y0 == y1 {
			return
		}
		if e2 := 2 * e; e2 >= dy {
			e += dy
			x0 += sx
		} else {
			e += dx
			y0 += sy
		}
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func sign(v int) int {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return 0
}

// digits is a 3x5 pixel font: each digit's rows, top first, 3 bits each.
var digits = [10][5]uint8{
	{7, 5, 5, 5, 7}, {2, 6, 2, 2, 7}, {7, 1, 7, 4, 7}, {7, 1, 7, 1, 7}, {5, 5, 7, 1, 1},
	{7, 4, 7, 1, 7}, {7, 4, 7, 5, 7}, {7, 1, 1, 1, 1}, {7, 5, 7, 5, 7}, {7, 5, 7, 1, 7},
}

// text draws the digits of s, twice the font's size, centred on x (or
// ending at x when rightAligned), top at y.
func text(img *image.RGBA, x, y int, s string, c color.RGBA, rightAligned bool) {
	const scale, advance = 2, 8
	start := x - len(s)*advance/2
	if rightAligned {
		start = x - len(s)*advance
	}
	for i, r := range s {
		if r < '0' || r > '9' {
			continue
		}
		for row, bits := range digits[r-'0'] {
			for col := 0; col < 3; col++ {
				if bits&(4>>col) != 0 {
					px, py := start+i*advance+col*scale, y+row*scale
					fill(img, image.Rect(px, py, px+scale, py+scale), c)
				}
			}
		}
	}
}
